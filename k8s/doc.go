// Package k8s is mirage's Kubernetes adapter, built on k8s.io/client-go.
//
// It provides four things; only the last applies decisions, and it takes
// them from the provisioner's team rules:
//
//   - Inventory: GPUs per node (allocatable nvidia.com/gpu and the MIG
//     resources nvidia.com/mig-*), the GPU product (label nvidia.com/gpu.product),
//     cordoned and not-ready nodes, and the GPUs requested by every pod bound to
//     a node, attributed to teams. BuildInventory is a pure function of Node and
//     Pod objects; Inventory.Snapshot converts it to a provisioner.Snapshot, and
//     Inventory.View computes the figures of "mirage k8s inventory" (FRAG
//     under a job-size mix, free quota per team).
//   - Deploy: a bare Pod bound to the chosen node (spec.nodeName) or a batch/v1
//     Job whose pod template requires that node (node affinity on
//     metadata.name), labelled with team, borrowed and chain, with a priority
//     class and GPU requests. Where work goes is decided by the provisioner's
//     team rules; Cluster.Submit places onto SubmitRequest.NodeList[0].
//   - Reclaim: a checkpoint signal (annotation mirage.io/checkpoint-requested,
//     plus an optional HTTP hook), then eviction through the Eviction API
//     (policy/v1) with a grace period.
//   - TeamCluster: Client with the team rules (team.Rules built for
//     a non-queueing backend). Its Submit/Place takes the inventory, asks the
//     rules, and deploys within quota, deploys borrowed work (label and
//     priority class) on idle GPUs, or performs a reclaim plan — checkpoint
//     signal to every victim, eviction of all of them at once with the grace
//     period, deployment on the freed node — or defers (ErrDeferred). Plan is
//     the dry run behind "mirage place".
//
// Contract:
//   - Team of a pod: the namespace→team mapping when the pod's namespace is
//     mapped (administrators control namespaces; users control labels), else
//     the pod label Config.TeamLabel (default mirage.io/team), else no team ("").
//   - A pod holds GPUs when it is bound (spec.nodeName set) and not terminal
//     (phase neither Succeeded nor Failed); a terminating pod still holds them
//     until it is gone, as the scheduler counts it. Its GPU request is the
//     effective pod request (containers, sidecars, init containers, overhead).
//   - Borrowed work carries the label mirage.io/borrowed=true; chains the label
//     mirage.io/chain. The label alone makes a pod borrowed for the rules
//     (RulesSnapshot), and a reclaim re-reads every victim's label just before
//     evicting it: a victim without it stops the reclaim, nothing evicted.
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
//   - Eviction without a kubelet: the API server marks an evicted pod
//     Terminating and waits for the kubelet to confirm; with no kubelet (the
//     test cluster) it would stay Terminating forever. Evict therefore waits
//     the grace period and, if the pod is still there, evicts it again with
//     grace 0, which removes it at once. With a kubelet the pod is normally
//     gone before the grace period ends and the second step never runs.
//   - Time comes from an injected Clock; nothing here calls time.Now in logic.
package k8s
