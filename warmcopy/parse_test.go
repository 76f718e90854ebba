package warmcopy

import (
	"bufio"
	"errors"
	"io"
	"strings"
	"testing"
)

func reader(s string) *bufio.Reader { return bufio.NewReaderSize(strings.NewReader(s), bufSize) }

// TestParseMetadumpLine reads lines as Debian's memcached 1.6.18 writes
// them (copied from its answers), and refuses the malformed.
func TestParseMetadumpLine(t *testing.T) {
	for _, tc := range []struct {
		name, line string
		want       Entry
		err        error
	}{
		{name: "with expiry, fetched", line: "key=foo exp=1796410054 la=1796409954 cas=1 fetch=yes cls=1 size=69",
			want: Entry{Key: "foo", Exp: 1796410054, LastAccess: 1796409954, CAS: 1, Fetched: true, Class: 1, Size: 69}},
		{name: "no expiry, URL-encoded", line: "key=a%2520b%2Fc exp=-1 la=1796409954 cas=2 fetch=no cls=1 size=67",
			want: Entry{Key: "a%20b/c", Exp: -1, LastAccess: 1796409954, CAS: 2, Class: 1, Size: 67}},
		{name: "UTF-8 key", line: "key=sp%C3%A9 exp=1796413554 la=1796409954 cas=3 fetch=no cls=1 size=69",
			want: Entry{Key: "spé", Exp: 1796413554, LastAccess: 1796409954, CAS: 3, Class: 1, Size: 69}},
		{name: "a plus stays a plus", line: "key=a+b exp=-1 la=5 cas=9",
			want: Entry{Key: "a+b", Exp: -1, LastAccess: 5, CAS: 9}},
		{name: "unknown fields are ignored", line: "key=k exp=-1 la=5 cas=9 fetch=no cls=2 size=70 ext_page=3 ttl=12",
			want: Entry{Key: "k", Exp: -1, LastAccess: 5, CAS: 9, Class: 2, Size: 70}},
		{name: "no key", line: "exp=-1 la=5 cas=9", err: ErrProtocol},
		{name: "no cas", line: "key=k exp=-1 la=5", err: ErrProtocol},
		{name: "no la", line: "key=k exp=-1 cas=1", err: ErrProtocol},
		{name: "no exp", line: "key=k la=1 cas=1", err: ErrProtocol},
		{name: "bad escape", line: "key=a%zz exp=-1 la=5 cas=9", err: ErrProtocol},
		{name: "exp below -1", line: "key=k exp=-2 la=5 cas=9", err: ErrProtocol},
		{name: "cas not a number", line: "key=k exp=-1 la=5 cas=x", err: ErrProtocol},
		{name: "fetch neither yes nor no", line: "key=k exp=-1 la=5 cas=1 fetch=maybe", err: ErrProtocol},
		{name: "field without value", line: "key=k exp=-1 la=5 cas=1 junk", err: ErrProtocol},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseMetadumpLine([]byte(tc.line))
			if !errors.Is(err, tc.err) || (tc.err == nil && err != nil) {
				t.Fatalf("parseMetadumpLine(%q) error %v, want %v", tc.line, err, tc.err)
			}
			if tc.err == nil && got != tc.want {
				t.Errorf("parseMetadumpLine(%q) = %+v, want %+v", tc.line, got, tc.want)
			}
		})
	}
}

// TestReadMetadump reads a whole answer, and each of the crawler's
// refusals as memcached 1.6.18 words them.
func TestReadMetadump(t *testing.T) {
	const dump = "key=foo exp=1796410054 la=1796409955 cas=1 fetch=yes cls=1 size=69\n" +
		"key=a%2520b%2Fc exp=-1 la=1796409954 cas=2 fetch=no cls=1 size=67\n" +
		"END\r\n"
	var keys []string
	if err := readMetadump(reader(dump), func(e Entry) { keys = append(keys, e.Key) }); err != nil {
		t.Fatal(err)
	}
	if strings.Join(keys, ",") != "foo,a%20b/c" {
		t.Errorf("keys %q", keys)
	}
	for _, tc := range []struct {
		answer string
		err    error
	}{
		{"BUSY currently processing crawler request\r\n", ErrBusy},
		{"BADCLASS invalid class id\r\n", errBadClass},
		{"BADCLASS invalid class id\r\n", ErrProtocol},
		{"ERROR\r\n", ErrProtocol},
		{"CLIENT_ERROR bad command line format\r\n", ErrProtocol},
		{"key=foo exp=-1 la=1 cas=1\nkey=bar exp=-1 la=1 cas=2\n", io.EOF},                        // cut short between lines
		{"key=foo exp=-1 la=1 cas=1\nkey=bar exp=-1 la", io.ErrUnexpectedEOF},                     // cut inside a line
		{"key=foo exp=-1 la=1 cas=1\nkey=" + strings.Repeat("x", maxLine) + "\n", ErrLineTooLong}, // over the limit
		{"key=" + strings.Repeat("y", 2*bufSize) + "\n", ErrLineTooLong},                          // over the buffer too
	} {
		err := readMetadump(reader(tc.answer), func(Entry) {})
		if !errors.Is(err, tc.err) {
			t.Errorf("readMetadump(%.40q…) error %v, want %v", tc.answer, err, tc.err)
		}
	}
	if !errors.Is(ErrLineTooLong, ErrProtocol) {
		t.Error("ErrLineTooLong is not a protocol error")
	}
}

// TestReadLine takes "\r\n" and "\n" ends, and a line of exactly maxLine
// bytes.
func TestReadLine(t *testing.T) {
	r := reader("a\r\nb\n" + strings.Repeat("z", maxLine) + "\r\n" + strings.Repeat("z", maxLine+1) + "\r\n")
	for _, want := range []string{"a", "b", strings.Repeat("z", maxLine)} {
		line, err := readLine(r)
		if err != nil || string(line) != want {
			t.Fatalf("readLine = %.20q…, %v; want %.20q…", line, err, want)
		}
	}
	if _, err := readLine(r); !errors.Is(err, ErrLineTooLong) {
		t.Errorf("a line of maxLine+1 bytes: %v, want ErrLineTooLong", err)
	}
}

// TestReadValues reads gets answers: values in the order asked with
// their flags and CAS uniques, misses left out, a value over the limit
// skipped over, and answers the protocol does not allow.
func TestReadValues(t *testing.T) {
	got, err := readValues(reader("VALUE a 5 3 11\r\nbar\r\nVALUE c 0 0 12\r\n\r\nVALUE d 4294967295 6 13\r\n123456\r\nEND\r\n"),
		[]string{"a", "b", "c", "d"}, 5)
	if err != nil {
		t.Fatal(err)
	}
	want := []item{
		{key: "a", flags: 5, cas: 11, value: []byte("bar"), size: 3},
		{key: "c", flags: 0, cas: 12, value: []byte{}, size: 0},
		{key: "d", flags: 4294967295, cas: 13, size: 6, tooLarge: true},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d items, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.key != w.key || g.flags != w.flags || g.cas != w.cas || string(g.value) != string(w.value) || g.size != w.size || g.tooLarge != w.tooLarge || (w.tooLarge && g.value != nil) {
			t.Errorf("item %d = %+v, want %+v", i, g, w)
		}
	}
	if got, err := readValues(reader("END\r\n"), []string{"a"}, 5); err != nil || len(got) != 0 {
		t.Errorf("a miss: %v, %v", got, err)
	}
	for _, tc := range []struct {
		name, answer string
		err          error
	}{
		{"key not asked", "VALUE x 0 1 1\r\na\r\nEND\r\n", ErrProtocol},
		{"out of order", "VALUE b 0 1 1\r\na\r\nVALUE a 0 1 2\r\na\r\nEND\r\n", ErrProtocol},
		{"no cas (a get's answer)", "VALUE a 0 1\r\na\r\nEND\r\n", ErrProtocol},
		{"flags over 32 bits", "VALUE a 4294967296 1 1\r\na\r\nEND\r\n", ErrProtocol},
		{"negative size", "VALUE a 0 -1 1\r\nEND\r\n", ErrProtocol},
		{"data not ended by CRLF", "VALUE a 0 1 1\r\nab\r\nEND\r\n", ErrProtocol},
		{"cut inside the data", "VALUE a 0 10 1\r\nabc", io.ErrUnexpectedEOF},
		{"cut inside skipped data", "VALUE a 0 100 1\r\nabc", io.ErrUnexpectedEOF},
		{"cut before END", "VALUE a 0 1 1\r\na\r\n", io.EOF},
		{"server error", "SERVER_ERROR out of memory\r\n", ErrServer},
		{"client error", "CLIENT_ERROR bad command line format\r\n", ErrProtocol},
		{"error", "ERROR\r\n", ErrProtocol},
		{"line over the limit", "VALUE " + strings.Repeat("k", maxLine) + " 0 1 1\r\na\r\nEND\r\n", ErrLineTooLong},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := readValues(reader(tc.answer), []string{"a", "b"}, 50); !errors.Is(err, tc.err) {
				t.Errorf("readValues error %v, want %v", err, tc.err)
			}
		})
	}
}

// TestReadStored reads the answers to add and set.
func TestReadStored(t *testing.T) {
	for _, tc := range []struct {
		answer string
		want   outcome
		err    error
	}{
		{"STORED\r\n", stored, nil},
		{"NOT_STORED\r\n", notStored, nil},
		{"SERVER_ERROR object too large for cache\r\n", refused, ErrServer},
		{"SERVER_ERROR out of memory storing object\r\n", refused, ErrServer},
		{"EXISTS\r\n", unanswered, ErrProtocol},
		{"CLIENT_ERROR bad data chunk\r\n", unanswered, ErrProtocol},
		{"ERROR\r\n", unanswered, ErrProtocol},
		{"STO", unanswered, io.ErrUnexpectedEOF},
		{"", unanswered, io.EOF},
	} {
		got, err := readStored(reader(tc.answer))
		if got != tc.want || !errors.Is(err, tc.err) || (tc.err == nil && err != nil) {
			t.Errorf("readStored(%q) = %v, %v; want %v, %v", tc.answer, got, err, tc.want, tc.err)
		}
	}
}

// TestReadStatsTime finds time among the stats.
func TestReadStatsTime(t *testing.T) {
	got, err := readStatsTime(reader("STAT pid 29260\r\nSTAT uptime 413\r\nSTAT time 1796410365\r\nSTAT version 1.6.18\r\nEND\r\n"))
	if err != nil || got != 1796410365 {
		t.Errorf("readStatsTime = %d, %v", got, err)
	}
	for _, answer := range []string{"STAT pid 1\r\nEND\r\n", "STAT time x\r\nEND\r\n", "ERROR\r\n"} {
		if _, err := readStatsTime(reader(answer)); !errors.Is(err, ErrProtocol) {
			t.Errorf("readStatsTime(%q) error %v, want ErrProtocol", answer, err)
		}
	}
}

// TestValidKey keeps what the text protocol can send.
func TestValidKey(t *testing.T) {
	for key, want := range map[string]bool{
		"k": true, "spé": true, strings.Repeat("k", 250): true, "a%20b/c": true,
		"": false, strings.Repeat("k", 251): false, "a b": false, "a\nb": false, "a\x00b": false, "a\x7fb": false,
	} {
		if validKey(key) != want {
			t.Errorf("validKey(%.20q) = %v, want %v", key, !want, want)
		}
	}
}
