package warmcopy

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strconv"
)

// maxLine is the longest answer line read, "\r\n" excluded: memcached 1.6
// writes a metadump line into a buffer of 4096 bytes (a URL-encoded key is
// at most 750 of them), and every other line it answers is shorter.
const maxLine = 4096

// maxKey is the longest key memcached's text protocol takes.
const maxKey = 250

// item is one value as a gets answered it. A value over the size the
// reader takes is skipped over on the wire: tooLarge is set, Value is nil
// and size says how long it was.
type item struct {
	key      string
	flags    uint32
	cas      uint64
	value    []byte
	size     int
	tooLarge bool
}

// readLine returns the next line of r without its "\n" or "\r\n" (a
// metadump line ends in "\n" only). The slice is r's and valid until the
// next read. A line over maxLine bytes is ErrLineTooLong; a stream that
// ends inside a line is io.ErrUnexpectedEOF.
func readLine(r *bufio.Reader) ([]byte, error) {
	line, err := r.ReadSlice('\n')
	switch {
	case errors.Is(err, bufio.ErrBufferFull):
		return nil, ErrLineTooLong
	case err == io.EOF && len(line) > 0:
		return nil, io.ErrUnexpectedEOF
	case err != nil:
		return nil, err
	}
	line = line[:len(line)-1]
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	if len(line) > maxLine {
		return nil, ErrLineTooLong
	}
	return line, nil
}

// errBadClass is the crawler's BADCLASS, a protocol error: what a
// memcached that has no `lru_crawler metadump hash` answers it.
var errBadClass = fmt.Errorf("%w: BADCLASS", ErrProtocol)

// answerError turns a line that is not the answer expected into an
// error: SERVER_ERROR wraps ErrServer, the crawler's BUSY wraps ErrBusy
// and its BADCLASS errBadClass, anything else (ERROR, CLIENT_ERROR, a
// line of no command) wraps ErrProtocol.
func answerError(line []byte) error {
	s := strconv.Quote(string(line))
	switch {
	case bytes.HasPrefix(line, []byte("SERVER_ERROR")):
		return fmt.Errorf("%w: %s", ErrServer, s)
	case bytes.HasPrefix(line, []byte("BUSY")):
		return fmt.Errorf("%w: %s", ErrBusy, s)
	case bytes.HasPrefix(line, []byte("BADCLASS")):
		return fmt.Errorf("%w: %s", errBadClass, s)
	}
	return fmt.Errorf("%w: %s", ErrProtocol, s)
}

// parseMetadumpLine reads one line of `lru_crawler metadump`'s answer, as
// memcached 1.6 writes it: space-separated name=value fields, key
// (URL-encoded), exp (Unix seconds on the node's clock, -1 for none), la
// (last access, Unix seconds), cas, fetch (yes or no), cls (slab class)
// and size (bytes the item takes). key, exp, la and cas are required;
// fields it does not know are ignored, so that a later memcached that
// adds some is still read.
func parseMetadumpLine(line []byte) (Entry, error) {
	var e Entry
	var have [4]bool // key, exp, la, cas
	for len(line) > 0 {
		var field []byte
		field, line, _ = bytes.Cut(line, []byte(" "))
		if len(field) == 0 {
			continue
		}
		name, val, ok := bytes.Cut(field, []byte("="))
		if !ok {
			return Entry{}, fmt.Errorf("%w: metadump field %q has no value", ErrProtocol, field)
		}
		var err error
		switch string(name) {
		case "key":
			e.Key, err = url.PathUnescape(string(val))
			have[0] = true
		case "exp":
			e.Exp, err = strconv.ParseInt(string(val), 10, 64)
			if err == nil && e.Exp < -1 {
				err = errors.New("below -1")
			}
			have[1] = true
		case "la":
			e.LastAccess, err = strconv.ParseInt(string(val), 10, 64)
			have[2] = true
		case "cas":
			e.CAS, err = strconv.ParseUint(string(val), 10, 64)
			have[3] = true
		case "fetch":
			switch string(val) {
			case "yes":
				e.Fetched = true
			case "no":
			default:
				err = errors.New("neither yes nor no")
			}
		case "cls":
			e.Class, err = strconv.Atoi(string(val))
		case "size":
			e.Size, err = strconv.Atoi(string(val))
		}
		if err != nil {
			return Entry{}, fmt.Errorf("%w: metadump field %q: %v", ErrProtocol, field, err)
		}
	}
	for i, name := range []string{"key", "exp", "la", "cas"} {
		if !have[i] {
			return Entry{}, fmt.Errorf("%w: metadump line without %s", ErrProtocol, name)
		}
	}
	return e, nil
}

// readMetadump reads the answer to `lru_crawler metadump`, calling fn for
// each entry, up to its END. The crawler's refusals (BUSY, BADCLASS,
// ERROR) come instead of any entry.
func readMetadump(r *bufio.Reader, fn func(Entry)) error {
	for {
		line, err := readLine(r)
		if err != nil {
			return err
		}
		if string(line) == "END" {
			return nil
		}
		if !bytes.HasPrefix(line, []byte("key=")) {
			return answerError(line)
		}
		e, err := parseMetadumpLine(line)
		if err != nil {
			return err
		}
		fn(e)
	}
}

// readStatsTime reads the answer to `stats` up to its END and returns its
// time: the node's clock in Unix seconds, the clock a metadump's exp and
// la are read on.
func readStatsTime(r *bufio.Reader) (int64, error) {
	var t int64
	found := false
	for {
		line, err := readLine(r)
		if err != nil {
			return 0, err
		}
		if string(line) == "END" {
			if !found {
				return 0, fmt.Errorf("%w: stats without time", ErrProtocol)
			}
			return t, nil
		}
		rest, ok := bytes.CutPrefix(line, []byte("STAT "))
		if !ok {
			return 0, answerError(line)
		}
		if v, ok := bytes.CutPrefix(rest, []byte("time ")); ok {
			if t, err = strconv.ParseInt(string(v), 10, 64); err != nil {
				return 0, fmt.Errorf("%w: stats time %q", ErrProtocol, v)
			}
			found = true
		}
	}
}

// readValues reads the answer to `gets keys...` up to its END: a VALUE
// block (VALUE <key> <flags> <bytes> <cas>, the data, "\r\n") for each key
// found, in the order asked, misses left out. A value over maxValue bytes
// is skipped over (tooLarge). A key not asked, or out of order, is a
// protocol error.
func readValues(r *bufio.Reader, keys []string, maxValue int) ([]item, error) {
	var out []item
	next := 0 // the first key that may answer next
	for {
		line, err := readLine(r)
		if err != nil {
			return nil, err
		}
		if string(line) == "END" {
			return out, nil
		}
		rest, ok := bytes.CutPrefix(line, []byte("VALUE "))
		if !ok {
			return nil, answerError(line)
		}
		it, err := parseValueLine(rest)
		if err != nil {
			return nil, err
		}
		for next < len(keys) && keys[next] != it.key {
			next++
		}
		if next == len(keys) {
			return nil, fmt.Errorf("%w: VALUE of %q, not asked for or out of order", ErrProtocol, it.key)
		}
		next++
		if it.size > maxValue {
			it.tooLarge = true
			if _, err := r.Discard(it.size); err != nil {
				return nil, noEOF(err)
			}
		} else {
			it.value = make([]byte, it.size)
			if _, err := io.ReadFull(r, it.value); err != nil {
				return nil, noEOF(err)
			}
		}
		var end [2]byte
		if _, err := io.ReadFull(r, end[:]); err != nil {
			return nil, noEOF(err)
		}
		if end != [2]byte{'\r', '\n'} {
			return nil, fmt.Errorf("%w: the value of %q does not end in \\r\\n", ErrProtocol, it.key)
		}
		out = append(out, it)
	}
}

// parseValueLine reads "<key> <flags> <bytes> <cas>", a VALUE line after
// its first word.
func parseValueLine(rest []byte) (item, error) {
	f := bytes.Fields(rest)
	if len(f) != 4 {
		return item{}, fmt.Errorf("%w: VALUE %q is not <key> <flags> <bytes> <cas>", ErrProtocol, rest)
	}
	flags, err1 := strconv.ParseUint(string(f[1]), 10, 32)
	size, err2 := strconv.ParseUint(string(f[2]), 10, 31)
	cas, err3 := strconv.ParseUint(string(f[3]), 10, 64)
	if err := errors.Join(err1, err2, err3); err != nil {
		return item{}, fmt.Errorf("%w: VALUE %q: %v", ErrProtocol, rest, err)
	}
	return item{key: string(f[0]), flags: uint32(flags), size: int(size), cas: cas}, nil
}

// outcome is what became of one storage command.
type outcome int8

const (
	// unanswered: no answer was read (the connection failed first), so
	// the value may or may not be stored.
	unanswered outcome = iota
	stored
	notStored
	// refused: SERVER_ERROR; nothing stored.
	refused
)

// readStored reads the answer to one add or set: STORED, NOT_STORED, or
// SERVER_ERROR (refused, with the error wrapping ErrServer). Anything else
// is a protocol error.
func readStored(r *bufio.Reader) (outcome, error) {
	line, err := readLine(r)
	if err != nil {
		return unanswered, err
	}
	switch string(line) {
	case "STORED":
		return stored, nil
	case "NOT_STORED":
		return notStored, nil
	}
	err = answerError(line)
	if errors.Is(err, ErrServer) {
		return refused, err
	}
	return unanswered, err
}

// noEOF turns an EOF inside an answer into io.ErrUnexpectedEOF.
func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// validKey reports whether key can be sent in a text-protocol command:
// 1 to 250 bytes, none of them a space or a control character (a key
// stored through the binary protocol may hold them).
func validKey(key string) bool {
	if len(key) == 0 || len(key) > maxKey {
		return false
	}
	for i := 0; i < len(key); i++ {
		if c := key[i]; c <= ' ' || c == 0x7f {
			return false
		}
	}
	return true
}
