package protocol

import (
	"path"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/autoresearch-dev/autoresearch-operator/internal/workspace"
)

// fileToken finds words that look like file names: a name, a dot and an
// extension that starts with a letter, so "0.223" and "v1.2" are not files.
var fileToken = regexp.MustCompile(`[A-Za-z0-9_][A-Za-z0-9_./-]*\.[A-Za-z][A-Za-z0-9]*`)

// codeExtensions are the extensions taken for files when the repository's
// file list is unknown; they keep "e.g" and "torch.nn.functional" out.
var codeExtensions = map[string]bool{
	"py": true, "ipynb": true, "pyx": true, "sh": true, "bash": true,
	"yaml": true, "yml": true, "json": true, "jsonl": true, "toml": true, "cfg": true, "ini": true,
	"txt": true, "csv": true, "tsv": true, "md": true,
	"c": true, "cc": true, "cpp": true, "cu": true, "cuh": true, "h": true, "hpp": true,
	"go": true, "rs": true, "js": true, "ts": true, "jl": true, "r": true, "lua": true,
	"pt": true, "pth": true, "ckpt": true, "npy": true, "npz": true, "safetensors": true,
	"bin": true, "parquet": true, "h5": true,
}

func hasCodeExtension(name string) bool {
	return codeExtensions[strings.ToLower(strings.TrimPrefix(path.Ext(name), "."))]
}

// loopFiles are written by the loop itself; prose that mentions them never
// makes them fixed or variable.
var loopFiles = map[string]bool{
	workspace.ExperiencesFile:  true,
	workspace.ResultsFile:      true,
	"autoresearch-protocol.md": true,
}

// Repo is what Parse knows of the repository the protocol file is in, with
// paths relative to the protocol file's directory.
type Repo struct {
	// Files lists its files, so that the older layout's prose can be
	// matched against real file names; nil means unknown, and then any
	// name with a usual code extension counts.
	Files []string
	// Marked lists the files that hold fixed-region markers, which keep the
	// constraints on their code.
	Marked []string
}

// repository is the list of files the older layout's prose is matched against.
type repository struct {
	known  bool
	files  map[string]bool
	marked map[string]bool
	// byBase lists the paths ending in each base name, for prose that names
	// "model.py" when the file is src/model.py.
	byBase map[string][]string
}

func newRepository(repo Repo) repository {
	r := repository{known: repo.Files != nil, files: map[string]bool{}, marked: map[string]bool{}, byBase: map[string][]string{}}
	for _, f := range repo.Files {
		f = path.Clean(f)
		r.files[f] = true
		r.byBase[path.Base(f)] = append(r.byBase[path.Base(f)], f)
	}
	for _, f := range repo.Marked {
		r.marked[path.Clean(f)] = true
	}
	return r
}

// resolve returns the repository path a token names. Without a file list
// a token counts when its extension is a usual code or data extension.
func (r repository) resolve(token string) (string, bool) {
	token = strings.TrimPrefix(token, "./")
	if !r.known {
		return token, hasCodeExtension(token)
	}
	if r.files[token] {
		return token, true
	}
	if !strings.Contains(token, "/") {
		if paths := r.byBase[token]; len(paths) == 1 {
			return paths[0], true
		}
	}
	return "", false
}

// mentioned is a file named in a section's prose.
type mentioned struct {
	file string
	// token is the text as written, when it differs from file.
	token string
	line  string
}

// proseFiles picks the repository files that a section's prose names, in
// order of first mention. skipped lists code-like names that are not in the
// repository, so the caller can say why they were left out.
func proseFiles(secs []*section, repo repository) (found []mentioned, skipped []string) {
	seen := map[string]bool{}
	for _, s := range secs {
		for _, l := range s.lines {
			for _, tok := range fileToken.FindAllString(l.text, -1) {
				if loopFiles[path.Base(tok)] {
					continue
				}
				f, ok := repo.resolve(tok)
				if !ok {
					if hasCodeExtension(tok) && !slices.Contains(skipped, tok) {
						skipped = append(skipped, tok)
					}
					continue
				}
				if seen[f] {
					continue
				}
				seen[f] = true
				m := mentioned{file: f, line: quoteLine(l.text)}
				if tok != f {
					m.token = tok
				}
				found = append(found, m)
			}
		}
	}
	return found, skipped
}

// splitFiles reads a comma-separated file list. Items may be quoted or carry
// a note after the name: "`prepare.py` (data loading)".
func splitFiles(v string) []string {
	var out []string
	for _, item := range strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == '，' || r == '、' || r == ';' }) {
		fields := strings.Fields(strings.TrimSpace(item))
		if len(fields) == 0 {
			continue
		}
		f := strings.Trim(fields[0], "`\"'")
		f = strings.TrimPrefix(f, "./")
		if f == "" || isNone(f) || slices.Contains(out, f) {
			continue
		}
		out = append(out, f)
	}
	return out
}

// quoteLine shortens a line of the file for a note.
func quoteLine(text string) string {
	s := stripBullet(text)
	if utf8.RuneCountInString(s) > 100 {
		r := []rune(s)
		s = string(r[:100]) + "…"
	}
	return s
}

func stripBullet(text string) string {
	return strings.TrimSpace(bulletPrefix.ReplaceAllString(strings.TrimSpace(text), ""))
}
