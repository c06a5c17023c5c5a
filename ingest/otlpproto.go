package ingest

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"slices"

	"google.golang.org/protobuf/encoding/protowire"
)

// maxMessage bounds one protobuf message (a framed request, or one
// ResourceSpans of a single request).
const maxMessage = 1 << 30

// otlpProtoDecoder reads OTLP protobuf. A single request is read one
// ResourceSpans field at a time; framed streams one request at a time.
type otlpProtoDecoder struct {
	br      *bufio.Reader
	k       *sink
	framing protoFraming
	off     int64 // bytes consumed
	buf     []byte
	hdr     []byte
	wire    wireDecoder
}

func newOTLPProtoDecoder(br *bufio.Reader, k *sink, f protoFraming) *otlpProtoDecoder {
	return &otlpProtoDecoder{br: br, k: k, framing: f, wire: wireDecoder{k: k}}
}

var errVarintOverflow = errors.New("varint overflows 64 bits")

// readUvarint reads a protobuf varint; io.EOF only when no byte was read.
func (d *otlpProtoDecoder) readUvarint() (uint64, error) {
	var x uint64
	for i := 0; ; i++ {
		c, err := d.br.ReadByte()
		if err != nil {
			if err == io.EOF && i > 0 {
				err = io.ErrUnexpectedEOF
			}
			return 0, err
		}
		d.off++
		if i == 9 && c > 1 {
			return 0, errVarintOverflow
		}
		if c < 0x80 {
			return x | uint64(c)<<(7*i), nil
		}
		x |= uint64(c&0x7f) << (7 * i)
	}
}

// readN reads n bytes into the decoder's buffer.
func (d *otlpProtoDecoder) readN(n uint64) ([]byte, error) { return d.readNAfter(nil, n) }

// readNAfter reads n bytes into the decoder's buffer after a copy of prefix.
func (d *otlpProtoDecoder) readNAfter(prefix []byte, n uint64) ([]byte, error) {
	if n > maxMessage {
		return nil, errors.New("message length over 1 GiB")
	}
	b := append(d.buf[:0], prefix...)
	// Grow by at most 1 MiB beyond what was read, so that a corrupt length
	// cannot allocate a gigabyte; the buffer is kept for the next message.
	for left := n; left > 0; {
		chunk := min(left, 1<<20)
		if uint64(cap(b)-len(b)) < chunk {
			b = slices.Grow(b, int(chunk))
		}
		m, err := io.ReadFull(d.br, b[len(b):len(b)+int(chunk)])
		b = b[:len(b)+m]
		d.off += int64(m)
		if err != nil {
			d.buf = b
			return b, unexpected(err)
		}
		left -= chunk
	}
	d.buf = b
	return b, nil
}

func unexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// truncated records damage at the current offset and ends the input.
func (d *otlpProtoDecoder) truncated(at int64, err error) error {
	if errors.Is(err, io.ErrUnexpectedEOF) {
		d.k.damagef(DamageTruncated, "%s: byte %d: input ends inside a message", d.k.file, at)
	} else {
		d.k.damagef(DamageTruncated, "%s: byte %d: %v", d.k.file, at, err)
	}
	return io.EOF
}

func (d *otlpProtoDecoder) decode() error {
	start := d.off
	switch d.framing {
	case framingSingle:
		return d.decodeField(start)
	case framingUint32:
		var hdr [4]byte
		m, err := io.ReadFull(d.br, hdr[:])
		d.off += int64(m)
		if err == io.EOF {
			return io.EOF
		}
		if err != nil {
			return d.truncated(start, unexpected(err))
		}
		return d.decodeFramed(start, uint64(binary.BigEndian.Uint32(hdr[:])))
	default:
		n, err := d.readUvarint()
		if err == io.EOF {
			return io.EOF
		}
		if err != nil {
			return d.truncated(start, err)
		}
		return d.decodeFramed(start, n)
	}
}

// decodeField reads one top-level field of a single request. A ResourceSpans
// field, tag and length included, is itself a request holding just it.
func (d *otlpProtoDecoder) decodeField(start int64) error {
	tag, err := d.readUvarint()
	if err == io.EOF {
		return io.EOF
	}
	if err != nil {
		return d.truncated(start, err)
	}
	num, typ := protowire.DecodeTag(tag)
	var n uint64
	switch typ {
	case protowire.BytesType:
		if n, err = d.readUvarint(); err != nil {
			return d.truncated(start, unexpected(err))
		}
	case protowire.VarintType:
		if _, err = d.readUvarint(); err != nil {
			return d.truncated(start, unexpected(err))
		}
		return nil
	case protowire.Fixed32Type:
		n = 4
	case protowire.Fixed64Type:
		n = 8
	default:
		d.k.damagef(DamageUnparseable, "%s: byte %d: invalid protobuf field (wire type %d)", d.k.file, start, typ)
		return io.EOF
	}
	if num != 1 || typ != protowire.BytesType {
		if _, err := d.readN(n); err != nil { // unknown field: skipped
			return d.truncated(start, err)
		}
		return nil
	}
	hdr := protowire.AppendVarint(protowire.AppendTag(d.hdr[:0], 1, protowire.BytesType), n)
	d.hdr = hdr
	b, err := d.readNAfter(hdr, n)
	if err != nil {
		return d.truncated(start, err)
	}
	d.decodeRequest(b, start)
	return nil
}

// decodeFramed reads one framed request of n bytes.
func (d *otlpProtoDecoder) decodeFramed(start int64, n uint64) error {
	b, err := d.readN(n)
	if err != nil {
		return d.truncated(start, err)
	}
	d.decodeRequest(b, d.off-int64(len(b)))
	return nil
}

// decodeRequest decodes and converts one ExportTraceServiceRequest.
func (d *otlpProtoDecoder) decodeRequest(b []byte, at int64) {
	if err := d.wire.request(b); err != nil {
		d.k.damagef(DamageUnparseable, "%s: byte %d: %v", d.k.file, at, err)
	}
}
