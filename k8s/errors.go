package k8s

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"syscall"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/mirage-gpu/mirage/provisioner"
)

// Errors the adapter reports for expected conditions (besides the
// provisioner's ErrUnavailable, ErrRejected and ErrNotFound).
var (
	ErrForbidden       = errors.New("forbidden by RBAC")                       // the credentials may not do this
	ErrUnauthorized    = errors.New("credentials rejected")                    // token/certificate not accepted
	ErrUnknownTeam     = errors.New("unknown team")                            // team not in the configured list
	ErrNoNode          = errors.New("no node chosen")                          // Submit without NodeList[0]
	ErrEvictionBlocked = errors.New("eviction blocked by a disruption budget") // 429 from the Eviction API
	ErrBadRef          = errors.New("bad job id")                              // not pod/ns/name or job/ns/name
)

// op names an API call for error messages: "list nodes", "create pods/eviction in team-a".
type op struct {
	verb, resource, namespace string
}

func (o op) String() string {
	s := o.verb + " " + o.resource
	if o.namespace != "" {
		s += " in namespace " + o.namespace
	}
	return s
}

// classify turns a client-go error into one of the adapter's errors, naming
// the server and kubeconfig (unreachable) or the verb and resource (forbidden).
func (c *Client) classify(o op, err error) error {
	if err == nil {
		return nil
	}
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded) && !isNetErr(err):
		return fmt.Errorf("k8s: %s: %w", o, err)
	case apierrors.IsForbidden(err):
		return fmt.Errorf("k8s: %s: %w: user %q may not %s %s (grant it in the mirage ClusterRole, see scripts/k8s/rbac/): %v",
			o, ErrForbidden, c.user(), o.verb, o.resource, apierrors.ReasonForError(err))
	case apierrors.IsUnauthorized(err):
		return fmt.Errorf("k8s: %s: %w by %s (check the token or client certificate in kubeconfig %s): %v",
			o, ErrUnauthorized, c.server(), c.kubeconfigName(), err)
	case apierrors.IsNotFound(err):
		return fmt.Errorf("k8s: %s: %w: %v", o, provisioner.ErrNotFound, err)
	case apierrors.IsTooManyRequests(err) && o.resource == "pods/eviction":
		return fmt.Errorf("k8s: %s: %w: %v", o, ErrEvictionBlocked, err)
	case apierrors.IsInvalid(err), apierrors.IsAlreadyExists(err), apierrors.IsBadRequest(err):
		return fmt.Errorf("k8s: %s: %w: %v", o, provisioner.ErrRejected, err)
	case apierrors.IsServiceUnavailable(err), apierrors.IsServerTimeout(err), apierrors.IsTimeout(err):
		return fmt.Errorf("k8s: %s: %w: API server %s is not serving: %v", o, provisioner.ErrUnavailable, c.server(), err)
	case isTLSErr(err):
		return fmt.Errorf("k8s: %s: %w: TLS with API server %s failed (check certificate-authority in kubeconfig %s): %v",
			o, provisioner.ErrUnavailable, c.server(), c.kubeconfigName(), err)
	case isNetErr(err):
		return fmt.Errorf("k8s: %s: %w: API server %s unreachable (is it running? check the server in kubeconfig %s): %v",
			o, provisioner.ErrUnavailable, c.server(), c.kubeconfigName(), err)
	}
	return fmt.Errorf("k8s: %s: %w", o, err)
}

// isNetErr reports transport-level failures: refused, reset, DNS, dial timeouts.
func isNetErr(err error) bool {
	var ue *url.Error
	var ne net.Error
	var oe *net.OpError
	var de *net.DNSError
	return errors.As(err, &ue) || errors.As(err, &oe) || errors.As(err, &de) || errors.As(err, &ne) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		strings.Contains(err.Error(), "connection refused")
}

// isTLSErr reports certificate verification failures.
func isTLSErr(err error) bool {
	var ua x509.UnknownAuthorityError
	var he x509.HostnameError
	var ci x509.CertificateInvalidError
	return errors.As(err, &ua) || errors.As(err, &he) || errors.As(err, &ci)
}
