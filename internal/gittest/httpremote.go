package gittest

import (
	"net"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"path/filepath"
	"testing"
)

// HTTPRemote is an empty bare repository served over git's smart HTTP
// protocol by git http-backend, on 127.0.0.1 or the address given, to
// clients that give a token as their basic-auth password.
type HTTPRemote struct {
	// URL is the repository's.
	URL string
	// Dir is the bare repository.
	Dir string
}

// NewHTTPRemote starts an HTTPRemote on 127.0.0.1 that takes token, with
// any username, until the test ends.
func NewHTTPRemote(t testing.TB, token string) HTTPRemote {
	t.Helper()
	return NewHTTPRemoteOn(t, token, "127.0.0.1")
}

// NewHTTPRemoteOn is NewHTTPRemote listening on host, for clients that do
// not share this machine's loopback.
func NewHTTPRemoteOn(t testing.TB, token, host string) HTTPRemote {
	t.Helper()
	root := t.TempDir()
	dir := filepath.Join(root, "results.git")
	Git(t, root, "init", "--quiet", "--bare", dir)
	// http-backend takes pushes from clients it does not know as a user.
	Git(t, dir, "config", "http.receivepack", "true")
	backend := &cgi.Handler{
		Path:       filepath.Join(Git(t, root, "--exec-path"), "git-http-backend"),
		Env:        []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1"},
		InheritEnv: []string{"PATH", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_NOSYSTEM"},
	}
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		t.Fatal(err)
	}
	server := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, password, ok := r.BasicAuth(); !ok || password != token {
			w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		backend.ServeHTTP(w, r)
	}))
	// The server's own listener, on 127.0.0.1, gives way to this one.
	_ = server.Listener.Close()
	server.Listener = l
	server.Start()
	t.Cleanup(server.Close)
	return HTTPRemote{URL: server.URL + "/results.git", Dir: dir}
}
