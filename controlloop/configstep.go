package controlloop

// inStep records that the config file of kind matches the slot map of
// generation gen (written now, or already holding the same content).
func (o *outputs) inStep(kind string, gen uint64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.steps == nil {
		o.steps = make(map[string]uint64, len(ConfigKinds()))
	}
	o.steps[kind] = gen
}

// ConfigGenerations returns, for each config file the loop keeps (only
// those asked for, and only once one was written), the generation of the
// slot map it was last found or written in step with. A value below the
// current map's generation for long means the file stopped following the
// map (mcrib_config_generation, alert McribConfigBehindMap).
func (l *Loop) ConfigGenerations() map[string]uint64 {
	l.out.mu.Lock()
	defer l.out.mu.Unlock()
	out := make(map[string]uint64, len(l.out.steps))
	for k, v := range l.out.steps {
		out[k] = v
	}
	return out
}
