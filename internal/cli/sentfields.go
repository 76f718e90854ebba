package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// sentFields is the set of fields a JSON document carried with a value
// other than null, as dotted paths: "hit_rate", "boot_limit.burst",
// "nodes.1.reachable". The CLI decodes a document into the server's own
// type, where a missing field and its zero value look alike; the renderers
// ask this set to print a field the server did not send (an older or newer
// mcrib, a value not known yet) as unknown rather than as zero. The nil set
// stands for a complete document, such as one built in Go: every field
// counts as sent.
type sentFields map[string]bool

// has reports whether the field at path was sent.
func (s sentFields) has(path string) bool { return s == nil || s[path] }

// under returns the fields below prefix, with paths relative to it.
func (s sentFields) under(prefix string) sentFields {
	if s == nil {
		return nil
	}
	sub := sentFields{}
	for p := range s {
		if rest, ok := strings.CutPrefix(p, prefix+"."); ok {
			sub[rest] = true
		}
	}
	return sub
}

// decodeDocument decodes the JSON document b into doc and returns the
// fields b carried.
func decodeDocument(b []byte, doc any) (sentFields, error) {
	if err := json.Unmarshal(b, doc); err != nil {
		return nil, err
	}
	sent := sentFields{}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := sent.collect(dec, ""); err != nil {
		return nil, err
	}
	return sent, nil
}

// collect reads one JSON value from dec and records its path, and those of
// the fields and elements inside it, unless it is null.
func (s sentFields) collect(dec *json.Decoder, path string) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	join := func(name string) string {
		if path == "" {
			return name
		}
		return path + "." + name
	}
	switch tok {
	case nil:
		return nil
	case json.Delim('{'):
		for dec.More() {
			key, err := dec.Token()
			if err != nil {
				return err
			}
			name, ok := key.(string)
			if !ok {
				return fmt.Errorf("object key %v is not a string", key)
			}
			if err := s.collect(dec, join(name)); err != nil {
				return err
			}
		}
		_, err = dec.Token() // the closing '}'
	case json.Delim('['):
		for i := 0; dec.More(); i++ {
			if err := s.collect(dec, join(strconv.Itoa(i))); err != nil {
				return err
			}
		}
		_, err = dec.Token() // the closing ']'
	}
	if path != "" {
		s[path] = true
	}
	return err
}
