// Package k8s is mirage's Kubernetes adapter, built on k8s.io/client-go.
// It decides nothing: the provisioner's Step and team rules decide, from
// one snapshot per cycle, and the Engine has this adapter carry the ops
// out. It provides:
//
//   - Inventory: GPUs per node (allocatable nvidia.com/gpu and the MIG
//     resources nvidia.com/mig-*), the GPU product (label nvidia.com/gpu.product),
//     cordoned and not-ready nodes, and the GPUs requested by every pod bound to
//     a node (or held for one: an unbound pod only one node may take),
//     attributed to teams. BuildInventory is a pure function of Node and Pod
//     objects; Client.Snapshot is it as a provisioner.Snapshot (borrowed pods
//     carrying the borrowed QOS, last checkpoints, Kubernetes' Capabilities:
//     it neither queues nor unpins), and Inventory.View computes the figures
//     of "mirage k8s inventory" (FRAG under a job-size mix, free quota per team).
//   - Deploy (Client.Submit): a bare Pod, or a batch/v1 Job, for the node the
//     team rules chose (SubmitRequest.NodeList[0]), which it requires by node
//     affinity on metadata.name so that the scheduler binds it there
//     (Config.Binding; BindNodeName binds it through spec.nodeName without a
//     scheduler), labelled with team, borrowed and chain, with a priority
//     class and GPU requests.
//   - Reclaim: Signal asks for a checkpoint (annotation
//     mirage.io/checkpoint-requested, plus an optional HTTP hook);
//     EvictBorrowed (provisioner.Evictor) evicts a victim through the Eviction
//     API (policy/v1) with the grace period, after checking that it is still
//     borrowed work. The Engine's provisioner.ExecuteReclaim orders them.
//   - History: mirage's finished pods, so that a segment that ended between
//     two cycles is seen (Succeeded, or Failed by its deadline, eviction or
//     exit code).
//   - TeamCluster: the one-job API on the same decision and executor: Plan,
//     the dry run behind "mirage place", and Place (decide, reclaim, deploy).
//
// Contract:
//   - Team of a pod: the namespace→team mapping when the pod's namespace is
//     mapped (administrators control namespaces; users control labels), else
//     the pod label Config.TeamLabel (default mirage.io/team), else no team ("").
//   - A pod holds GPUs when it is bound (spec.nodeName set) and not terminal
//     (phase neither Succeeded nor Failed); a terminating pod still holds them
//     until it is gone, as the scheduler counts it. Its GPU request is the
//     effective pod request (containers, sidecars, init containers, overhead).
//   - Borrowed work is the work of the borrowed priority class (which a pod
//     keeps for life); the label mirage.io/borrowed=true mirrors it, and
//     chains carry the label mirage.io/chain. EvictBorrowed re-reads every
//     victim just before evicting it: one that is not borrowed work is not
//     evicted.
//   - A workload may report its last completed checkpoint in the annotation
//     mirage.io/last-checkpoint (RFC 3339); a reclaim prefers victims that
//     lose the least work since then.
//   - A node is "down" unless its Ready condition is True, "drained" when
//     cordoned (spec.unschedulable), else "up". Only up nodes have free GPUs.
//   - Job ids are "pod/<namespace>/<name>" or "job/<namespace>/<name>".
//   - Errors: an unreachable API server wraps provisioner.ErrUnavailable and
//     names the server and the kubeconfig; RBAC denials wrap ErrForbidden and
//     name the verb and resource; unknown teams wrap ErrUnknownTeam (and
//     provisioner.ErrRejected on Submit); missing objects wrap
//     provisioner.ErrNotFound.
//   - The owner's quota is freed within the grace period: the API server
//     marks an evicted pod Terminating and waits for its kubelet to confirm;
//     a kubelet that is gone (or none at all) would leave it so forever.
//     Evict therefore waits the grace period and, if the pod is still there,
//     evicts it again with grace 0, which removes it at once. With a kubelet
//     (or kwok, in the test control plane) the pod is normally gone when its
//     workload exits, within the grace period, and the second step never runs.
//   - Time comes from an injected Clock; nothing here calls time.Now in logic.
package k8s
