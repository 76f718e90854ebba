// Package slotplan decides a pool's next slot map: Decide turns the
// previous map and what is known of the nodes (Input) into a Plan of
// evictions and placements, and Build applies the placements that were
// carried out to the previous map. It is a leaf: it imports only
// cachenodes, the wire's vocabulary (mcribapi, whose eviction reasons its
// plans carry) and the standard library, does no I/O and reads no clock
// (Input.Now is given), so the same Input always gives the same Plan and
// the same map.
//
// What it promises:
//
//   - Freeing comes before placing: due and maintenance holders leave
//     their slots (within Input.Budget and only when not frozen) before
//     vacant slots take spares.
//   - A node that answers keeps its slot however long Consul misses it;
//     only the hold (NodeView.Due) or maintenance takes it out.
//   - A spare is placed only when it is eligible (NodeView.EligibleSpare),
//     holds no slot, warms none, and no holder or warm source has its
//     address; no address is ever in two slots.
//   - Every choice of a node for a slot follows the spread rule
//     (spread.go); nothing is ever moved only to even out the spread.
//   - Drain and return steps (Input.Steps) move at most a step's size,
//     a slot with a warming object only once it is removed, and a return
//     gives back the slots its drain moved first (undrain.go).
//   - Every placement but the first fill of a new pool is announced
//     first (announce.go): Build writes it as the slot's incoming node,
//     and a later pass serves it (Plan.Serves) or drops it (Plan.Drops);
//     a warming that ends early is written with ended_at and removed
//     WarmWriteGrace after its reads end, never sooner (warming.go).
//   - Build raises the generation by one exactly when a slot's node
//     changes and the revision with every document it builds, keeps a
//     warming's until and an announce's instants as first written, and
//     returns Input.Prev itself when nothing in the document changes.
//
// The control loop (package controlloop) gathers the Input from its
// probes, the replicas' votes and the stored documents, carries the plan
// out (flushing each spare before it is announced) and writes the map
// Build returns.
package slotplan
