package controlloop

import (
	"bytes"
	"sync"

	"github.com/mcrib/mcrib/cachenodes"
)

// The kinds of config file the loop keeps in step with the slot map: the
// label values of the config-write metrics (Metrics.ConfigWrite).
const (
	ConfigMcrouter  = "mcrouter"
	ConfigTwemproxy = "twemproxy"
)

// ConfigKinds lists every config kind, so that an exporter can create
// each label value at 0.
func ConfigKinds() []string { return []string{ConfigMcrouter, ConfigTwemproxy} }

// outputs is what the loop last handed to the world outside Consul: the
// bytes of each config file it wrote, and the slot map it published to
// the watchers of Changed. Its zero value is ready to use; it is safe for
// concurrent use.
type outputs struct {
	mu        sync.Mutex
	written   map[string][]byte // by config kind
	published *cachenodes.SlotMap
	changed   chan struct{} // closed at the next change; nil until asked for
	// steps is, by config kind, the generation of the slot map each
	// config file was last found or written in step with.
	steps map[string]uint64
}

// writeConfig renders m with render and, when the result differs from what
// it last wrote there, writes it to path with WriteFileAtomic, telling
// opts' metrics and logger. It does
// nothing when path is empty (that config is not asked for) or m is nil.
// Every write is recorded in the metrics: a failure (which is also logged)
// is counted, and since nothing is marked written the next pass tries
// again; a success records its time.
func (o *outputs) writeConfig(opts Options, kind, path string, m *cachenodes.SlotMap, render func(*cachenodes.SlotMap) ([]byte, error)) {
	if path == "" || m == nil {
		return
	}
	data, err := render(m)
	if err == nil {
		o.mu.Lock()
		same := o.written[kind] != nil && bytes.Equal(o.written[kind], data)
		o.mu.Unlock()
		if same {
			o.inStep(kind, m.Generation())
			return
		}
		err = WriteFileAtomic(path, data)
	}
	if err != nil {
		opts.Metrics.ConfigWrite(kind, opts.Clock.Now(), err)
		opts.Logger.Error("writing the "+kind+" config failed; retrying next pass", "path", path, "err", err)
		return
	}
	o.mu.Lock()
	if o.written == nil {
		o.written = make(map[string][]byte, len(ConfigKinds()))
	}
	o.written[kind] = data
	o.mu.Unlock()
	o.inStep(kind, m.Generation())
	opts.Metrics.ConfigWrite(kind, opts.Clock.Now(), nil)
	opts.Logger.Info("wrote the "+kind+" config", "path", path, "generation", m.Generation())
}
