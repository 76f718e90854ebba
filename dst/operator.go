package dst

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mcrib/mcrib/cachenodes"
	"github.com/mcrib/mcrib/mcribapi"
)

// operator carries out an operator's call through a random replica the
// operator reaches, retrying a few times a second later when it fails.
func (w *world) operator(what string, call func(p *replicaProc) error, attempt int) {
	r := w.randomReplica()
	p := r.proc
	var err error
	switch {
	case p == nil:
		err = fmt.Errorf("%s is down", r.host.name)
	case w.net.send("c1", r.host.name, "http", what) != delivered:
		err = fmt.Errorf("%s unreachable", r.host.name)
	default:
		err = call(p)
		w.touch(p)
		if l := w.leaderReplica(); l != nil {
			w.touch(l.proc)
		}
	}
	if err == nil {
		w.tr.add(w.now, "operator: %s through %s done", what, r.host.name)
		return
	}
	w.tr.add(w.now, "operator: %s through %s failed: %v", what, r.host.name, err)
	if attempt < 5 {
		w.after(time.Second, "operator "+what, func() { w.operator(what, call, attempt+1) })
	}
}

// operatorFault carries out an operator's action of kind k and reports
// whether k is one.
func (w *world) operatorFault(k string) bool {
	switch k {
	case faultFreeze:
		d := w.between(10*time.Second, 90*time.Second)
		w.fault("an operator freezes membership for %v", d)
		w.operator("freeze", func(p *replicaProc) error {
			_, err := p.loop.Freeze(context.Background(), "dst: operator freeze", "dst")
			return err
		}, 0)
		w.after(d, "unfreeze", func() {
			w.operator("unfreeze", func(p *replicaProc) error { return p.loop.Unfreeze(context.Background()) }, 0)
		})
	case faultDrain:
		zone := w.randomZone()
		d := w.between(30*time.Second, 3*time.Minute)
		req := mcribapi.Drain{Reason: "dst: zone " + zone + " flapping", Percent: []int{50, 100}[w.rng.IntN(2)],
			StepPercent: []int{10, 25, 50}[w.rng.IntN(3)], StepInterval: w.between(2*time.Second, 10*time.Second).Truncate(time.Second)}
		w.fault("an operator drains zone %s (%d%%, steps of %d%% every %v) for %v", zone, req.Percent, req.StepPercent, req.StepInterval, d)
		if w.rng.IntN(10) < 6 {
			// The reason to drain a zone: it half-fails. Its nodes keep
			// pausing, now one, now another, while the drain goes on.
			w.grayZone(zone, d)
		}
		w.operator("drain "+zone, func(p *replicaProc) error {
			_, err := p.loop.Drain(context.Background(), zone, req, "dst")
			return err
		}, 0)
		w.after(d, "undrain "+zone, func() {
			w.operator("undrain "+zone, func(p *replicaProc) error {
				_, err := p.loop.Undrain(context.Background(), zone)
				return err
			}, 0)
		})
	case faultReplace:
		n := w.randomHolder()
		w.fault("an operator replaces %s", n.id)
		w.operator("replace "+n.id, func(p *replicaProc) error {
			l := w.leaderReplica()
			if l == nil || (l.proc != p && w.net.send(p.r.host.name, l.host.name, "http", "forward replace") != delivered) {
				return fmt.Errorf("no leader to forward to")
			}
			// Noted before the call: its write may commit with its answer lost.
			w.chk.onReplace(n)
			res, err := l.proc.loop.Replace(context.Background(), n.id, "dst: operator replace", "dst")
			if err == nil {
				w.tr.add(w.now, "replace of %s: slot %d to %s (warm %v)", n.id, res.Slot, res.To, res.Warm)
			}
			return err
		}, 0)
	case faultResize:
		w.resizeFault(0)
	case faultMaintenance:
		n := w.randomHolder()
		s := w.consul.services[n.id]
		d := w.between(20*time.Second, 90*time.Second)
		if s == nil || s.maintenance {
			return true
		}
		w.fault("an operator puts %s in maintenance for %v", n.id, d)
		s.maintenance = true
		w.consul.touchHealth()
		w.after(d, "maintenance over "+n.id, func() {
			s.maintenance = false
			w.chk.nodes[n.id].maintEnded = w.now
			w.consul.touchHealth()
		})
	default:
		return false
	}
	return true
}

// resizeFault is an operator's resize: with no resize under way, one
// doubling the slots (within cachenodes.MaxSlots); while one splits,
// most often nothing (the splits go on), else a stop; while one is
// stopped, a resume. A refusal (409: a freeze, a drained zone, twins of
// another resize, no ready spare; 404: none to stop) is an answer, not a
// failure: the operator tries the same again a while later, twice at
// most.
func (w *world) resizeFault(refused int) {
	m := w.chk.kvMap
	if m == nil {
		return
	}
	e := w.chk.resizeEntry()
	n := m.NumSlots()
	req := mcribapi.Resize{Reason: "dst: grown past its slots", StepPercent: []int{25, 50, 100}[w.rng.IntN(3)],
		StepInterval: w.between(5*time.Second, 30*time.Second).Truncate(time.Second)}
	what := ""
	switch {
	case e != nil && e.State == mcribapi.ResizeStopped:
		req.NumSlots, what = n, fmt.Sprintf("resumes the resize to %d slots", n)
	case e != nil && e.State != mcribapi.ResizeDone && m.NumTwins() > 0:
		if w.rng.IntN(3) != 0 {
			return
		}
		what = "stops the resize"
	case 2*n > cachenodes.MaxSlots:
		return
	default:
		req.NumSlots, what = 2*n, fmt.Sprintf("doubles the slots to %d", 2*n)
	}
	if req.NumSlots > 0 {
		w.fault("an operator %s (splits of %d%% every %v)", what, req.StepPercent, req.StepInterval)
	} else {
		w.fault("an operator %s", what)
	}
	w.operator("resize", func(p *replicaProc) error {
		l := w.leaderReplica()
		if l == nil || (l.proc != p && w.net.send(p.r.host.name, l.host.name, "http", "forward resize") != delivered) {
			return fmt.Errorf("no leader to forward to")
		}
		var doc mcribapi.ResizeDoc
		var err error
		if req.NumSlots > 0 {
			doc, err = l.proc.loop.StartResize(context.Background(), req, "dst")
		} else {
			doc, err = l.proc.loop.StopResize(context.Background(), "dst")
		}
		switch {
		case errors.Is(err, mcribapi.ErrRefused) || errors.Is(err, mcribapi.ErrNoResize) || errors.Is(err, mcribapi.ErrBadRequest):
			w.tr.add(w.now, "resize refused: %v", err)
			if refused < 2 {
				w.after(w.between(30*time.Second, 90*time.Second), "resize again", func() { w.resizeFault(refused + 1) })
			}
			return nil
		case err == nil && doc.Resize != nil:
			w.tr.add(w.now, "resize: %d to %d slots, %s, %d twins", doc.Resize.From, doc.Resize.To, doc.Resize.State, doc.Resize.Twins)
		}
		return err
	}, 0)
}
