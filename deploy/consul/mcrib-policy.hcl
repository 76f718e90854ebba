# Consul ACL policy of `mcrib serve` for the pool "default" under the KV
# prefix "mcrib" (--kv-prefix), whose cache nodes are the service
# "memcached" (--service). For another pool, prefix or service, change the
# names below; docs/production.md creates the policy and one token per host
# with `consul acl policy create` and `consul acl token create`.
# e2e/acl_test.go runs mcrib with a token of exactly this policy against a
# Consul whose ACLs deny by default.

# Everything mcrib keeps: the slot map, freeze, boot limit, drain, flushes,
# replacements, resize, the leader lock (leader) and the replicas'
# reachability votes (unreachable/<leader_id>).
key_prefix "mcrib/default/" {
  policy = "write"
}

# The leader and replica sessions, created on the local agent's node. With
# fixed agent node names, `session "<node>" { policy = "write" }` for each
# of the three hosts is tighter.
session_prefix "" {
  policy = "write"
}

# The service "mcrib-leader" that each replica registers on its local agent,
# with the TTL check its session is tied to (leader/campaign.go), kept
# passing through the agent's check update endpoint.
service "mcrib-leader" {
  policy = "write"
}

# The cache nodes (--service): read through Consul's health endpoint.
service "memcached" {
  policy = "read"
}

# The nodes the cache instances run on, which health answers name (and
# which Consul filters out of them without this), and the serfHealth check
# of the agent's node that the sessions carry.
node_prefix "" {
  policy = "read"
}
