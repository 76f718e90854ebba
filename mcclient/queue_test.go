package mcclient

import (
	"slices"
	"testing"
)

func TestReplayQueue(t *testing.T) {
	for _, tc := range []struct {
		name      string
		max       int
		push      []string
		pop       int // keys replayed from the front
		wantOK    []bool
		wantOrder []string // what is left, oldest first
	}{
		{name: "order", max: 10, push: []string{"a", "b", "c"}, wantOK: []bool{true, true, true}, wantOrder: []string{"a", "b", "c"}},
		{name: "bound", max: 2, push: []string{"a", "b", "c", "d"}, wantOK: []bool{true, true, false, false}, wantOrder: []string{"a", "b"}},
		{name: "a key once, in its first place", max: 3, push: []string{"a", "b", "a", "c"}, wantOK: []bool{true, true, true, true}, wantOrder: []string{"a", "b", "c"}},
		{name: "a duplicate of a full queue is no drop", max: 2, push: []string{"a", "b", "b"}, wantOK: []bool{true, true, true}, wantOrder: []string{"a", "b"}},
		{name: "pops free room", max: 2, push: []string{"a", "b"}, pop: 1, wantOK: []bool{true, true}, wantOrder: []string{"b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := newReplayQueue(tc.max)
			var ok []bool
			for _, k := range tc.push {
				ok = append(ok, q.Push(k))
			}
			if !slices.Equal(ok, tc.wantOK) {
				t.Fatalf("Push answers %v, want %v", ok, tc.wantOK)
			}
			for range tc.pop {
				k, _ := q.Front()
				q.Pop(k)
			}
			if q.Len() != len(tc.wantOrder) {
				t.Fatalf("Len %d, want %d", q.Len(), len(tc.wantOrder))
			}
			var got []string
			for {
				k, ok := q.Front()
				if !ok {
					break
				}
				got = append(got, k)
				q.Pop(k)
			}
			if !slices.Equal(got, tc.wantOrder) {
				t.Fatalf("replayed %v, want %v", got, tc.wantOrder)
			}
			if q.Len() != 0 {
				t.Fatalf("Len %d after replaying everything", q.Len())
			}
		})
	}
}

func TestReplayQueueLongRunCompacts(t *testing.T) {
	q := newReplayQueue(5000)
	next := 0
	for i := range 20000 {
		if !q.Push(string(rune('A'+i%26)) + string(rune(i))) {
			t.Fatalf("push %d refused with %d queued", i, q.Len())
		}
		if i%2 == 1 { // pop one for every two pushed, then drain
			k, _ := q.Front()
			q.Pop(k)
			next++
		}
		if q.Len() > 4000 {
			for q.Len() > 0 {
				k, _ := q.Front()
				q.Pop(k)
			}
		}
	}
	if len(q.keys)-q.head != q.Len() {
		t.Fatalf("the slice holds %d keys for a Len of %d", len(q.keys)-q.head, q.Len())
	}
	if cap(q.keys) > 20000 {
		t.Fatalf("the slice grew to %d for a queue of at most 5000", cap(q.keys))
	}
}

func TestReplayQueueClear(t *testing.T) {
	q := newReplayQueue(10)
	q.Push("a")
	q.Push("b")
	if n := q.Clear(); n != 2 {
		t.Fatalf("Clear = %d, want 2", n)
	}
	if _, ok := q.Front(); ok || q.Len() != 0 {
		t.Fatalf("queue not empty after Clear")
	}
	if !q.Push("a") {
		t.Fatalf("a cleared key cannot be queued again")
	}
}
