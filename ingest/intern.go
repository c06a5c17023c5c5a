package ingest

// maxInterned bounds the interner so that a high-cardinality value cannot
// make it grow without limit; past it the table starts afresh.
const maxInterned = 1 << 18

// interner hands out one shared copy of each repeated string.
type interner struct {
	m map[string]string
}

func (in *interner) str(s string) string {
	if s == "" {
		return ""
	}
	if v, ok := in.m[s]; ok {
		return v
	}
	if in.m == nil || len(in.m) >= maxInterned {
		in.m = make(map[string]string, 1024)
	}
	in.m[s] = s
	return s
}

// bytes interns b without allocating when it is already known.
func (in *interner) bytes(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if v, ok := in.m[string(b)]; ok {
		return v
	}
	return in.str(string(b))
}
