// Package ingest reads trace files in the formats perfcast understands and
// yields one normalized span type, [Span].
//
// Formats are recognized by content, gzip included:
//
//   - OTLP JSON: one ExportTraceServiceRequest per file, or one per line as the
//     OpenTelemetry Collector file exporter writes them. Ids are hex, 64-bit
//     integers may be strings, enums may be numbers or names.
//   - OTLP protobuf: a single ExportTraceServiceRequest, or a stream of them,
//     each preceded by its length as a varint or as a 4-byte big-endian
//     integer.
//   - Zipkin v2 JSON: an array of spans, or an array of traces (arrays of
//     spans) as the Zipkin API returns them.
//   - Jaeger JSON: {"data": [trace, ...]} as the Jaeger UI downloads it and
//     the query API returns it, or a single bare trace object.
//
// Reading streams: line-per-request OTLP JSON is decoded one line at a time,
// protobuf one ResourceSpans or one framed request at a time, Zipkin one span
// at a time and Jaeger one trace at a time. A single OTLP JSON document that
// is not split into lines is decoded whole, one top-level JSON value at a time.
//
// Damage (unparseable lines, truncated input, spans without ids or times, end
// before start) is skipped, counted by kind in [Damage] and reported with its
// place. A file that is not a trace format, or holds no span at all, is an
// error naming the file.
package ingest
