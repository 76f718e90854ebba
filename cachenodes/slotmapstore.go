package cachenodes

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
)

// StoredPlainLimit is the largest slot-map document stored in Consul KV as
// plain JSON; a larger one is stored gzip-compressed. Consul refuses values
// and transactions over 512 KiB by default, and the document of a pool of
// 10,000 nodes and 4,096 slots is about 0.8 MB as JSON.
const StoredPlainLimit = 256 << 10

// maxStoredSlotMap bounds what ParseSlotMap inflates from a compressed
// document, so a corrupt or hostile value cannot exhaust memory.
const maxStoredSlotMap = 64 << 20

// gzipMagic starts every gzip stream; JSON never starts with it.
var gzipMagic = []byte{0x1f, 0x8b}

// EncodeStoredSlotMap returns the bytes mcrib stores in Consul KV for m: its
// JSON document, gzip-compressed when the JSON is over StoredPlainLimit.
// ParseSlotMap reads both forms; a client in another language that reads
// KV directly inflates a value that starts with the gzip magic (1f 8b), or
// follows GET /v1/slotmap, which always answers plain JSON.
func EncodeStoredSlotMap(m *SlotMap) ([]byte, error) {
	body, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("encoding the slot map: %w", err)
	}
	if len(body) <= StoredPlainLimit {
		return body, nil
	}
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(body); err != nil {
		return nil, fmt.Errorf("compressing the slot map: %w", err)
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("compressing the slot map: %w", err)
	}
	return buf.Bytes(), nil
}

// inflateStored returns data, inflated when it is a gzip stream of at most
// limit bytes.
func inflateStored(data []byte, limit int) ([]byte, error) {
	if !bytes.HasPrefix(data, gzipMagic) {
		return data, nil
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("%w: a compressed document that cannot be read: %v", ErrInvalidSlotMap, err)
	}
	out, err := io.ReadAll(io.LimitReader(zr, int64(limit)+1))
	if err != nil {
		return nil, fmt.Errorf("%w: a compressed document that cannot be read: %v", ErrInvalidSlotMap, err)
	}
	if len(out) > limit {
		return nil, fmt.Errorf("%w: a compressed document over %d bytes", ErrInvalidSlotMap, limit)
	}
	return out, nil
}
