package cachenodes

import (
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/hashicorp/consul/api"
)

// Check IDs Consul gives its maintenance-mode checks.
const (
	nodeMaintenanceCheckID          = "_node_maintenance"
	serviceMaintenanceCheckIDPrefix = "_service_maintenance:"
)

// Instance is one instance of the service as one Consul answer lists it.
type Instance struct {
	Node
	// Present is true when the instance is listed with every check passing.
	Present bool
	// Maintenance is true when the instance's service maintenance check
	// ("_service_maintenance:<service id>") or its node's maintenance check
	// ("_node_maintenance") is critical: an operator took it out on purpose.
	Maintenance bool
}

// Membership is one answer of Consul's health endpoint: the instances of the
// service sorted by ID, and the X-Consul-Index of the answer. An instance
// that Consul no longer lists (deregistered, or its agent left) is simply
// not in Instances.
type Membership struct {
	Instances []Instance
	Index     uint64
}

// Instance returns the instance with the given ID and whether it is listed.
// It does not rely on the order of Instances.
func (m Membership) Instance(id string) (Instance, bool) {
	for _, in := range m.Instances {
		if in.ID == id {
			return in, true
		}
	}
	return Instance{}, false
}

// instances turns the health entries into instances sorted by ID, keeping
// one entry per service ID.
func (s *ConsulSource) instances(entries []*api.ServiceEntry) []Instance {
	type candidate struct {
		inst     Instance
		nodeName string
	}
	byID := make(map[string]candidate, len(entries))
	for _, e := range entries {
		if e == nil || e.Service == nil {
			continue
		}
		c := candidate{inst: instanceOf(e)}
		if e.Node != nil {
			c.nodeName = e.Node.Node
		}
		prev, dup := byID[c.inst.ID]
		if !dup {
			byID[c.inst.ID] = c
			continue
		}
		keep, drop := prev, c
		if better(c.inst, c.nodeName, prev.inst, prev.nodeName) {
			keep, drop = c, prev
		}
		s.logger.Warn("service ID registered on two Consul nodes; keeping one",
			"service", s.service, "service_id", c.inst.ID,
			"kept_node", keep.nodeName, "dropped_node", drop.nodeName)
		byID[c.inst.ID] = keep
	}
	out := make([]Instance, 0, len(byID))
	for _, c := range byID {
		out = append(out, c.inst)
	}
	slices.SortFunc(out, func(a, b Instance) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// better reports whether instance a on node an should win over b on node bn
// when both carry the same service ID: a present one wins, then the one on
// the node whose name sorts first.
func better(a Instance, an string, b Instance, bn string) bool {
	if a.Present != b.Present {
		return a.Present
	}
	return an < bn
}

// instanceOf converts one health entry.
func instanceOf(e *api.ServiceEntry) Instance {
	svc := e.Service
	var nodeAddr string
	var nodeMeta map[string]string
	if e.Node != nil {
		nodeAddr, nodeMeta = e.Node.Address, e.Node.Meta
	}
	host := svc.Address
	if host == "" {
		host = nodeAddr
	}
	az := svc.Meta["az"]
	if az == "" {
		az = nodeMeta["az"]
	}
	inst := Instance{
		Node:    Node{ID: svc.ID, Addr: net.JoinHostPort(host, strconv.Itoa(svc.Port)), AZ: az},
		Present: true,
	}
	serviceMaint := serviceMaintenanceCheckIDPrefix + svc.ID
	for _, c := range e.Checks {
		if c == nil {
			continue
		}
		if c.Status != api.HealthPassing {
			inst.Present = false
		}
		if c.Status == api.HealthCritical && (c.CheckID == nodeMaintenanceCheckID || c.CheckID == serviceMaint) {
			inst.Maintenance = true
		}
	}
	return inst
}
