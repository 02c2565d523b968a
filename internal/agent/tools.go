package agent

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/autoresearch-dev/autoresearch-operator/internal/keyenv"
	"github.com/autoresearch-dev/autoresearch-operator/internal/workspace"
)

// Tool names, as the model sees them.
const (
	ToolListFiles      = "list_files"
	ToolReadFile       = "read_file"
	ToolWriteFile      = "write_file"
	ToolEditFile       = "edit_file"
	ToolRunCommand     = "run_command"
	ToolRecordStrategy = "record_strategy"
)

// Limits of what one tool call shows the model.
const (
	maxListEntries  = 500
	defaultReadLine = 2000
	maxReadBytes    = 256 << 10
	maxStrategyLen  = 500
	// stateDirName is the supervisor's scratch directory in the worktree.
	stateDirName = ".autoresearch"
)

// ToolboxOptions configure the tools of one Researcher run.
type ToolboxOptions struct {
	// Dir is the working directory: the experiment directory of the
	// worktree. Every path the model gives is taken from it and must stay
	// inside it.
	Dir string
	// Fixed are the protocol's fixed files, relative to Dir. Writes to them
	// are refused.
	Fixed []string
	// ExperiencesPath is the ledger; only record_strategy adds to it, and
	// results.tsv next to it is not writable at all.
	ExperiencesPath string
	// Round numbers the Strategy row.
	Round int
	// CommandTimeout is the default and the longest time one command runs.
	CommandTimeout time.Duration
	// OutputLimit is how many bytes of a command's output the model sees.
	OutputLimit int
	// Env is the commands' environment; when nil, this process's
	// environment without the usual API key variables.
	Env []string
	// Redact removes secrets from what the tools show the model.
	Redact *Redactor
}

// Toolbox is the set of tools the model may call, confined to one
// directory.
type Toolbox struct {
	opts ToolboxOptions
	// dir is Dir with symbolic links resolved; paths are checked against it.
	dir  string
	root *os.Root
	// protected maps a slash path relative to dir to why it may not be written.
	protected map[string]string
	// fixedDirs are fixed entries that are directories: all below is fixed.
	fixedDirs []string
	// fixedGlobs are fixed entries that are globs, such as eval/**/*.py.
	fixedGlobs []string
	strategy   string
}

// refusal is a tool error that tells the model which rule it broke.
type refusal struct{ msg string }

func (r *refusal) Error() string { return "refused: " + r.msg }

func refuse(format string, args ...any) error { return &refusal{msg: fmt.Sprintf(format, args...)} }

// NewToolbox opens the working directory.
func NewToolbox(o ToolboxOptions) (*Toolbox, error) {
	if o.CommandTimeout <= 0 {
		o.CommandTimeout = 2 * time.Minute
	}
	if o.OutputLimit <= 0 {
		o.OutputLimit = 16 << 10
	}
	if o.Env == nil {
		o.Env = keyenv.Without(os.Environ())
	}
	if o.ExperiencesPath != "" && !filepath.IsAbs(o.ExperiencesPath) {
		o.ExperiencesPath = filepath.Join(o.Dir, o.ExperiencesPath)
	}
	dir, err := filepath.EvalSymlinks(o.Dir)
	if err != nil {
		return nil, err
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	t := &Toolbox{opts: o, dir: dir, root: root, protected: map[string]string{}}
	fixedList := strings.Join(o.Fixed, ", ")
	for _, f := range o.Fixed {
		if workspace.IsGlob(f) {
			t.fixedGlobs = append(t.fixedGlobs, filepath.ToSlash(f))
			continue
		}
		rel := filepath.ToSlash(filepath.Clean(f))
		why := fmt.Sprintf("%s is a fixed file of the protocol (fixed: %s); change only the variable files", rel, fixedList)
		t.protected[rel] = why
		if info, err := root.Stat(rel); err == nil && info.IsDir() {
			t.fixedDirs = append(t.fixedDirs, rel)
		}
	}
	if o.ExperiencesPath != "" {
		ledger := "%s is the supervisor's ledger; add your Strategy row with the record_strategy tool"
		for _, p := range []string{o.ExperiencesPath, filepath.Join(filepath.Dir(o.ExperiencesPath), workspace.ResultsFile)} {
			if rel, ok := t.inside(p); ok {
				t.protected[rel] = fmt.Sprintf(ledger, rel)
			}
		}
	}
	return t, nil
}

// Close releases the working directory.
func (t *Toolbox) Close() error { return t.root.Close() }

// Strategy is the last strategy the model recorded.
func (t *Toolbox) Strategy() string { return t.strategy }

// inside returns p relative to the working directory when it lies inside.
func (t *Toolbox) inside(p string) (string, bool) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", false
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	rel, err := filepath.Rel(t.dir, abs)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", false
	}
	return filepath.ToSlash(rel), true
}

// resolve turns a path from the model into a clean slash path relative to
// the working directory, or refuses it.
func (t *Toolbox) resolve(p string) (string, error) {
	if strings.TrimSpace(p) == "" {
		return "", errors.New("path is empty")
	}
	if filepath.IsAbs(p) {
		rel, ok := t.relAbs(p)
		if !ok {
			return "", refuse("%s is outside the working directory %s; use paths inside it (relative paths are taken from it)", p, t.opts.Dir)
		}
		p = rel
	}
	rel := path.Clean(filepath.ToSlash(p))
	if rel == ".." || strings.HasPrefix(rel, "../") {
		return "", refuse("%s is outside the working directory %s; use paths inside it", p, t.opts.Dir)
	}
	if slices.Contains(strings.Split(rel, "/"), ".git") {
		return "", refuse("%s is in the git directory, which belongs to the supervisor: it alone commits and rolls back", p)
	}
	return rel, nil
}

// relAbs makes an absolute path relative to the working directory as the
// model may know it: given, or with symbolic links resolved.
func (t *Toolbox) relAbs(p string) (string, bool) {
	for _, base := range []string{t.opts.Dir, t.dir} {
		if abs, err := filepath.Abs(base); err == nil {
			if rel, err := filepath.Rel(abs, filepath.Clean(p)); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
				return rel, true
			}
		}
	}
	return "", false
}

// writable refuses writes to protected paths, also when a symbolic link
// inside the directory leads to one.
func (t *Toolbox) writable(rel string) error {
	target := rel
	real, err := t.realRel(rel)
	if err != nil {
		return err
	}
	for _, p := range []string{rel, real} {
		if why, ok := t.protected[p]; ok {
			return refuse("%s", why)
		}
		if g, ok := workspace.MatchAnyPattern(t.fixedGlobs, p); ok {
			return refuse("%s matches %s, a fixed pattern of the protocol; change only the variable files", target, g)
		}
		for _, d := range t.fixedDirs {
			if strings.HasPrefix(p, d+"/") {
				return refuse("%s is inside %s, a fixed directory of the protocol; change only the variable files", target, d)
			}
		}
		parts := strings.Split(p, "/")
		if slices.Contains(parts, ".git") {
			return refuse("%s is in the git directory, which belongs to the supervisor", target)
		}
		if parts[0] == stateDirName {
			return refuse("%s is in %s/, the supervisor's logs and state", target, stateDirName)
		}
	}
	return nil
}

// realRel resolves symbolic links in rel, or in its nearest existing
// parent for a file still to be created.
func (t *Toolbox) realRel(rel string) (string, error) {
	full := filepath.Join(t.dir, filepath.FromSlash(rel))
	rest := ""
	for {
		real, err := filepath.EvalSymlinks(full)
		if err == nil {
			r, ok := t.inside(filepath.Join(real, rest))
			if !ok {
				return "", refuse("%s leads outside the working directory through a symbolic link", rel)
			}
			return r, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		parent := filepath.Dir(full)
		if parent == full {
			return rel, nil
		}
		rest = filepath.Join(filepath.Base(full), rest)
		full = parent
	}
}

// rootError explains errors from os.Root in the model's terms.
func rootError(rel string, err error) error {
	if err != nil && strings.Contains(err.Error(), "path escapes from parent") {
		return refuse("%s leads outside the working directory through a symbolic link", rel)
	}
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s does not exist (list_files shows what does)", rel)
	}
	return err
}

// Specs describes the tools to the model.
func (t *Toolbox) Specs() []ToolSpec {
	return []ToolSpec{
		{Name: ToolListFiles, Description: "List files under a directory of the working directory, recursively, with sizes in bytes. The git directory and .autoresearch/ are left out.",
			Schema: schema(`{"path":{"type":"string","description":"directory relative to the working directory; default ."}}`)},
		{Name: ToolReadFile, Description: "Read a text file. Long files come in parts: offset is the first line (1-based), limit the number of lines.",
			Schema: schema(`{"path":{"type":"string"},"offset":{"type":"integer","minimum":1},"limit":{"type":"integer","minimum":1}}`, "path")},
		{Name: ToolWriteFile, Description: "Create or replace a file with the given content; parent directories are created. Fixed files, the ledger (experiences.md, results.tsv) and the git directory cannot be written.",
			Schema: schema(`{"path":{"type":"string"},"content":{"type":"string"}}`, "path", "content")},
		{Name: ToolEditFile, Description: "Replace old_string with new_string in a file. old_string must match the file exactly, whitespace included, and occur once unless replace_all is true.",
			Schema: schema(`{"path":{"type":"string"},"old_string":{"type":"string"},"new_string":{"type":"string"},"replace_all":{"type":"boolean"}}`, "path", "old_string", "new_string")},
		{Name: ToolRunCommand, Description: fmt.Sprintf("Run a shell command (sh -c) in the working directory, for quick smoke tests. Output is cut to %d bytes; the command is killed after timeout_seconds (at most %d). Do not train or evaluate for real, and do not use git to change anything: the supervisor does both.", t.opts.OutputLimit, int(t.opts.CommandTimeout.Seconds())),
			Schema: schema(`{"command":{"type":"string"},"timeout_seconds":{"type":"integer","minimum":1}}`, "command")},
		{Name: ToolRecordStrategy, Description: fmt.Sprintf("Record this round's strategy: appends the row `| %d |  |  |  | <strategy> |  |  |` to experiences.md. One line saying what you change and why. Calling it again records a newer strategy.", t.opts.Round),
			Schema: schema(`{"strategy":{"type":"string"}}`, "strategy")},
	}
}

func schema(properties string, required ...string) json.RawMessage {
	req, _ := json.Marshal(append([]string{}, required...))
	return json.RawMessage(`{"type":"object","properties":` + properties + `,"required":` + string(req) + `}`)
}

// Call runs one tool call; every failure, refusals included, becomes an
// error result the model reads and can act on.
func (t *Toolbox) Call(ctx context.Context, c ToolCall) ToolResult {
	out, err := t.call(ctx, c)
	res := ToolResult{CallID: c.ID, Content: out}
	if err != nil {
		res.IsError = true
		res.Content = strings.TrimSpace(out + "\n" + err.Error())
	}
	res.Content = t.opts.Redact.String(res.Content)
	return res
}

func (t *Toolbox) call(ctx context.Context, c ToolCall) (string, error) {
	args := c.Arguments
	if strings.TrimSpace(args) == "" {
		args = "{}"
	}
	decode := func(v any) error {
		dec := json.NewDecoder(strings.NewReader(args))
		dec.DisallowUnknownFields()
		if err := dec.Decode(v); err != nil {
			return fmt.Errorf("the arguments of %s are not valid: %v", c.Name, err)
		}
		return nil
	}
	switch c.Name {
	case ToolListFiles:
		var a struct {
			Path string `json:"path"`
		}
		if err := decode(&a); err != nil {
			return "", err
		}
		return t.listFiles(a.Path)
	case ToolReadFile:
		var a struct {
			Path   string `json:"path"`
			Offset int    `json:"offset"`
			Limit  int    `json:"limit"`
		}
		if err := decode(&a); err != nil {
			return "", err
		}
		return t.readFile(a.Path, a.Offset, a.Limit)
	case ToolWriteFile:
		var a struct {
			Path    string  `json:"path"`
			Content *string `json:"content"`
		}
		if err := decode(&a); err != nil {
			return "", err
		}
		if a.Content == nil {
			return "", errors.New("content is missing")
		}
		return t.writeFile(a.Path, *a.Content)
	case ToolEditFile:
		var a struct {
			Path       string `json:"path"`
			OldString  string `json:"old_string"`
			NewString  string `json:"new_string"`
			ReplaceAll bool   `json:"replace_all"`
		}
		if err := decode(&a); err != nil {
			return "", err
		}
		return t.editFile(a.Path, a.OldString, a.NewString, a.ReplaceAll)
	case ToolRunCommand:
		var a struct {
			Command        string `json:"command"`
			TimeoutSeconds int    `json:"timeout_seconds"`
		}
		if err := decode(&a); err != nil {
			return "", err
		}
		return t.runCommand(ctx, a.Command, time.Duration(a.TimeoutSeconds)*time.Second)
	case ToolRecordStrategy:
		var a struct {
			Strategy string `json:"strategy"`
		}
		if err := decode(&a); err != nil {
			return "", err
		}
		return t.recordStrategy(a.Strategy)
	}
	return "", fmt.Errorf("there is no tool %q; the tools are %s, %s, %s, %s, %s and %s", c.Name,
		ToolListFiles, ToolReadFile, ToolWriteFile, ToolEditFile, ToolRunCommand, ToolRecordStrategy)
}

// readDir returns the entries of dir, a directory inside the root.
func (t *Toolbox) readDir(dir string) ([]os.DirEntry, error) {
	f, err := t.root.Open(dir)
	if err != nil {
		return nil, rootError(dir, err)
	}
	defer f.Close()
	entries, err := f.ReadDir(-1)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	return entries, nil
}

func (t *Toolbox) listFiles(p string) (string, error) {
	if p == "" {
		p = "."
	}
	rel, err := t.resolve(p)
	if err != nil {
		return "", err
	}
	var lines []string
	more := 0
	var walk func(dir string) error
	walk = func(dir string) error {
		entries, err := t.readDir(dir)
		if err != nil {
			return err
		}
		slices.SortFunc(entries, func(a, b os.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
		for _, e := range entries {
			name := path.Join(dir, e.Name())
			if e.Name() == ".git" || name == stateDirName {
				continue
			}
			if len(lines) >= maxListEntries {
				more++
				continue
			}
			switch {
			case e.Type()&fs.ModeSymlink != 0:
				target, _ := os.Readlink(filepath.Join(t.dir, filepath.FromSlash(name)))
				lines = append(lines, fmt.Sprintf("%s -> %s", name, target))
			case e.IsDir():
				lines = append(lines, name+"/")
				if err := walk(name); err != nil {
					return err
				}
			default:
				size := int64(0)
				if info, err := e.Info(); err == nil {
					size = info.Size()
				}
				lines = append(lines, fmt.Sprintf("%s %d", name, size))
			}
		}
		return nil
	}
	if err := walk(rel); err != nil {
		return "", err
	}
	if more > 0 {
		lines = append(lines, fmt.Sprintf("… and %d more entries; list a subdirectory to see them", more))
	}
	if len(lines) == 0 {
		return rel + " is empty", nil
	}
	return strings.Join(lines, "\n"), nil
}

func (t *Toolbox) readFile(p string, offset, limit int) (string, error) {
	rel, err := t.resolve(p)
	if err != nil {
		return "", err
	}
	f, err := t.root.Open(rel)
	if err != nil {
		return "", rootError(rel, err)
	}
	defer f.Close()
	if info, err := f.Stat(); err != nil {
		return "", err
	} else if info.IsDir() {
		return "", fmt.Errorf("%s is a directory; use list_files", rel)
	}
	offset = max(offset, 1)
	if limit <= 0 {
		limit = defaultReadLine
	}
	var b strings.Builder
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	n, last := 0, 0
	cut := false
	for sc.Scan() {
		n++
		line := sc.Bytes()
		if n == 1 && bytes.IndexByte(line, 0) >= 0 {
			return "", fmt.Errorf("%s is a binary file", rel)
		}
		if n < offset || n >= offset+limit || cut {
			continue
		}
		if b.Len()+len(line) > maxReadBytes {
			cut = true
			continue
		}
		b.Write(line)
		b.WriteByte('\n')
		last = n
	}
	if err := sc.Err(); err != nil {
		return "", fmt.Errorf("%s: %w", rel, err)
	}
	if n == 0 {
		return rel + " is empty", nil
	}
	if offset > n {
		return "", fmt.Errorf("%s has %d lines; offset %d is past the end", rel, n, offset)
	}
	if last < n {
		fmt.Fprintf(&b, "[lines %d-%d of %d; read on with offset=%d]\n", offset, last, n, last+1)
	}
	return b.String(), nil
}

func (t *Toolbox) writeFile(p, content string) (string, error) {
	rel, err := t.resolve(p)
	if err != nil {
		return "", err
	}
	if err := t.writable(rel); err != nil {
		return "", err
	}
	mode := os.FileMode(0o644)
	if info, err := t.root.Stat(rel); err == nil {
		if info.IsDir() {
			return "", fmt.Errorf("%s is a directory", rel)
		}
		mode = info.Mode().Perm()
	}
	if parent := path.Dir(rel); parent != "." {
		if err := t.root.MkdirAll(parent, 0o755); err != nil {
			return "", rootError(rel, err)
		}
	}
	if err := t.root.WriteFile(rel, []byte(content), mode); err != nil {
		return "", rootError(rel, err)
	}
	return fmt.Sprintf("wrote %d bytes to %s", len(content), rel), nil
}

func (t *Toolbox) editFile(p, old, new string, all bool) (string, error) {
	rel, err := t.resolve(p)
	if err != nil {
		return "", err
	}
	if err := t.writable(rel); err != nil {
		return "", err
	}
	if old == "" {
		return "", errors.New("old_string is empty; use write_file to create a file")
	}
	if old == new {
		return "", errors.New("old_string and new_string are the same")
	}
	info, err := t.root.Stat(rel)
	if err != nil {
		return "", rootError(rel, err)
	}
	data, err := t.root.ReadFile(rel)
	if err != nil {
		return "", rootError(rel, err)
	}
	text := string(data)
	n := strings.Count(text, old)
	switch {
	case n == 0:
		return "", fmt.Errorf("old_string not found in %s; read the file again and copy the text exactly, whitespace included", rel)
	case n > 1 && !all:
		return "", fmt.Errorf("old_string occurs %d times in %s; add surrounding lines to make it unique, or set replace_all", n, rel)
	}
	if all {
		text = strings.ReplaceAll(text, old, new)
	} else {
		text = strings.Replace(text, old, new, 1)
	}
	if err := t.root.WriteFile(rel, []byte(text), info.Mode().Perm()); err != nil {
		return "", rootError(rel, err)
	}
	if all {
		return fmt.Sprintf("replaced %d occurrences in %s", n, rel), nil
	}
	return "replaced 1 occurrence in " + rel, nil
}

// recordStrategy appends the round's row. The supervisor takes the last
// row of the round, so a second call supersedes the first.
func (t *Toolbox) recordStrategy(strategy string) (string, error) {
	cell := workspace.StrategyCell(strategy)
	switch {
	case cell == "":
		return "", errors.New("strategy is empty; say in one line what you change and why")
	case len(cell) > maxStrategyLen:
		return "", fmt.Errorf("strategy is %d characters; keep it under %d", len(cell), maxStrategyLen)
	case t.opts.ExperiencesPath == "":
		return "", errors.New("no experiences file was given to this Researcher (AUTORESEARCH_EXPERIENCES)")
	}
	if err := workspace.AppendStrategy(t.opts.ExperiencesPath, t.opts.Round, strategy); err != nil {
		return "", err
	}
	t.strategy = cell
	return fmt.Sprintf("recorded: | %d |  |  |  | %s |  |  |", t.opts.Round, cell), nil
}
