package cachenodes

// Node is one memcached instance of the pool as Consul names it. ID is the
// Consul service ID and is the node's identity; Addr is "host:port"; AZ is
// the availability zone (service meta "az", else node meta "az", else "").
type Node struct {
	ID   string `json:"node_id"`
	Addr string `json:"addr"`
	AZ   string `json:"az"`
}

// IsZero reports whether n names no node (a vacant slot).
func (n Node) IsZero() bool { return n.ID == "" }
