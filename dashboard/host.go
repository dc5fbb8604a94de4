package dashboard

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
)

// allowedHosts normalises Options.AllowedHosts: lower case, without a port.
func allowedHosts(list []string) (map[string]bool, bool, error) {
	hosts := map[string]bool{}
	anyHost := false
	for _, h := range list {
		h = strings.TrimSpace(h)
		if h == "*" {
			anyHost = true
			continue
		}
		name := hostname(h)
		if name == "" || strings.ContainsAny(h, "/?#@ ") {
			return nil, false, fmt.Errorf("dashboard: AllowedHosts entry %q: want a host name or an IP address, or \"*\"", h)
		}
		hosts[name] = true
	}
	return hosts, anyHost, nil
}

// hostname is the host of a Host header (or of an AllowedHosts entry):
// without the port or the IPv6 brackets, in lower case.
func hostname(hostport string) string {
	h := hostport
	if strings.HasPrefix(h, "[") {
		if end := strings.IndexByte(h, ']'); end > 0 {
			h = h[1:end]
		}
	} else if strings.Count(h, ":") == 1 {
		h, _, _ = strings.Cut(h, ":")
	}
	return strings.ToLower(h)
}

// isLoopbackHost reports whether a Host names this machine in a way no one
// else's DNS can answer for: the name localhost or a loopback IP literal.
func isLoopbackHost(h string) bool {
	if h == "localhost" {
		return true
	}
	a, err := netip.ParseAddr(h)
	return err == nil && a.Unmap().IsLoopback()
}

// checkHost applies Options.AllowedHosts. It returns 0 when r may be
// served, else the status and a plain message.
func (d *Dashboard) checkHost(r *http.Request) (int, string) {
	if d.anyHost || d.opts.Auth.Enabled() && len(d.hosts) == 0 {
		return 0, ""
	}
	if h := hostname(r.Host); !isLoopbackHost(h) && !d.hosts[h] {
		// A page that reached a loopback dashboard through a name its
		// attacker re-pointed at 127.0.0.1 (DNS rebinding) lands here.
		return http.StatusMisdirectedRequest, fmt.Sprintf("this dashboard does not answer to the host name %q: "+
			"open it as localhost or 127.0.0.1, or list the name in its allowed hosts", r.Host)
	}
	if !d.opts.Auth.Enabled() && len(d.hosts) == 0 && !loopbackPeer(r.RemoteAddr) {
		// A Host header is the client's word; without auth the zero
		// configuration serves this machine only.
		return http.StatusForbidden, "this dashboard has no authentication and serves clients on this machine only"
	}
	return 0, ""
}

func loopbackPeer(remoteAddr string) bool {
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		return false
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.Unmap().IsLoopback()
}

// checkOrigin refuses requests a browser marks as coming from another site
// or origin. The Origin must match the request's own scheme and host (the
// Host has passed checkHost). Requests without those headers (old
// browsers, scripts) rely on the token.
func (d *Dashboard) checkOrigin(r *http.Request) error {
	switch r.Header.Get("Sec-Fetch-Site") {
	case "cross-site", "same-site":
		return errors.New("cross-origin request refused: the browser says it came from another site")
	}
	o := r.Header.Get("Origin")
	if o == "" {
		return nil
	}
	scheme := "http"
	if d.secure(r) {
		scheme = "https"
	}
	u, err := url.Parse(o)
	if err != nil || u.Host == "" {
		return fmt.Errorf("cross-origin request refused: Origin %q", o)
	}
	if !strings.EqualFold(u.Scheme, scheme) || !strings.EqualFold(withoutDefaultPort(u.Scheme, u.Host), withoutDefaultPort(scheme, r.Host)) {
		msg := fmt.Sprintf("cross-origin request refused: the form came from %s, not from %s://%s", o, scheme, r.Host)
		if strings.EqualFold(u.Scheme, "https") && scheme == "http" {
			msg += "; behind a TLS-terminating proxy, set SecureCookies (chokaq dashboard --secure-cookies)"
		}
		return errors.New(msg)
	}
	return nil
}

// withoutDefaultPort drops :80 from an http host and :443 from an https
// one, which browsers leave out of Origin.
func withoutDefaultPort(scheme, host string) string {
	switch {
	case strings.EqualFold(scheme, "http"):
		return strings.TrimSuffix(host, ":80")
	case strings.EqualFold(scheme, "https"):
		return strings.TrimSuffix(host, ":443")
	}
	return host
}
