package dst

import (
	"context"
	"fmt"
	"time"

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
