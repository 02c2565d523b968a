package gittest

import (
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"path/filepath"
	"testing"
)

// HTTPRemote is an empty bare repository served over git's smart HTTP
// protocol by git http-backend, on 127.0.0.1, to clients that give a token
// as their basic-auth password.
type HTTPRemote struct {
	// URL is the repository's.
	URL string
	// Dir is the bare repository.
	Dir string
}

// NewHTTPRemote starts an HTTPRemote that takes token, with any username,
// until the test ends.
func NewHTTPRemote(t testing.TB, token string) HTTPRemote {
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
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, password, ok := r.BasicAuth(); !ok || password != token {
			w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		backend.ServeHTTP(w, r)
	}))
	t.Cleanup(server.Close)
	return HTTPRemote{URL: server.URL + "/results.git", Dir: dir}
}
