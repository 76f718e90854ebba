package eventlog

import "github.com/mcrib/mcrib/mcribapi"

// Recorder feeds one event stream into a Log and a History: every event
// is logged, and flushes and replacements are counted in the history's
// current interval. It implements controlloop.EventSink. Either field may
// be nil.
type Recorder struct {
	Log     *Log
	History *History
}

// Record logs e and counts it.
func (r Recorder) Record(e mcribapi.Event) {
	if r.Log != nil {
		r.Log.Add(e)
	}
	if r.History != nil {
		r.History.Count(e.Kind)
	}
}
