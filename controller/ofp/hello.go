package ofp

import "encoding/binary"

const helloElemVersionBitmap = 1 // OFPHET_VERSIONBITMAP

// Hello is OFPT_HELLO. Versions lists the versions the sender supports, in
// ascending order; it comes from the OFPHET_VERSIONBITMAP element, or is
// the header version alone when the hello carries no bitmap. Append writes
// a bitmap element only when Versions is not empty.
type Hello struct {
	Versions []uint8
}

func (Hello) Type() Type { return TypeHello }

// Supports reports whether the sender of h speaks version v.
func (h *Hello) Supports(v uint8) bool {
	for _, x := range h.Versions {
		if x == v {
			return true
		}
	}
	return false
}

func (h Hello) appendBody(b []byte) []byte {
	if len(h.Versions) == 0 {
		return b
	}
	var maxV uint8
	for _, v := range h.Versions {
		maxV = max(maxV, v)
	}
	words := int(maxV)/32 + 1
	elemLen := 4 + 4*words
	b = binary.BigEndian.AppendUint16(b, helloElemVersionBitmap)
	b = binary.BigEndian.AppendUint16(b, uint16(elemLen))
	start := len(b)
	for range words {
		b = append(b, 0, 0, 0, 0)
	}
	for _, v := range h.Versions {
		w := start + 4*(int(v)/32)
		binary.BigEndian.PutUint32(b[w:], binary.BigEndian.Uint32(b[w:])|1<<(v%32))
	}
	return appendPad8(b, elemLen)
}

// decodeBody serves the BodyDecoder interface; Decode and DecodeInto call
// decode with the real header version instead.
func (h *Hello) decodeBody(body []byte) error { return h.decode(Version, body) }

func (h *Hello) decode(version uint8, body []byte) error {
	h.Versions = h.Versions[:0]
	found := false // only the first bitmap counts
	for len(body) > 0 {
		if len(body) < 4 {
			return ErrShort
		}
		typ := binary.BigEndian.Uint16(body)
		n := int(binary.BigEndian.Uint16(body[2:]))
		if n < 4 || n > len(body) {
			return ErrBadLength
		}
		if typ == helloElemVersionBitmap && !found {
			if (n-4)%4 != 0 {
				return ErrBadLength
			}
			found = true
			for w := 0; 4+4*w < n; w++ {
				bits := binary.BigEndian.Uint32(body[4+4*w:])
				for bit := range 32 {
					if bits&(1<<bit) != 0 && w*32+bit <= 255 {
						h.Versions = append(h.Versions, uint8(w*32+bit))
					}
				}
			}
		}
		// Elements are padded to 8 bytes; a last element may omit its
		// padding, as some implementations do.
		n = min(pad8(n), len(body))
		body = body[n:]
	}
	// An empty bitmap says nothing either; fall back to the header.
	if len(h.Versions) == 0 {
		h.Versions = append(h.Versions, version)
	}
	return nil
}

func pad8(n int) int { return (n + 7) &^ 7 }

// appendPad8 appends zeros so that the n bytes just written become a
// multiple of 8.
func appendPad8(b []byte, n int) []byte {
	for range pad8(n) - n {
		b = append(b, 0)
	}
	return b
}
