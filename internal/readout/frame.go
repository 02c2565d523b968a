package readout

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// The output is a gzipped tar archive, an entry per item, in base64 lines
// between a begin line and an end line that gives the archive's size and
// SHA-256: a log cut short, or a stray line inside the frame, fails the
// check instead of passing as data. Lines outside the frame are ignored.
const (
	beginLine = "autoresearch-readout v1 begin"
	endPrefix = "autoresearch-readout v1 end "
	lineWidth = 76
	// PAX records of an item that could not be read.
	recordError   = "AUTORESEARCH.error"
	recordMissing = "AUTORESEARCH.missing"
)

// Entry is an item as read: its bytes, or why there are none.
type Entry struct {
	Data []byte
	// Err says why the item could not be read; Missing says that was
	// because its file or directory does not exist.
	Err     string
	Missing bool
}

// Entries are the items read, by name.
type Entries map[string]Entry

// Writer writes the framed archive of items to a log.
type Writer struct {
	out   io.Writer
	lines *lineWriter
	b64   io.WriteCloser
	gz    *gzip.Writer
	tar   *tar.Writer
	sum   hashCounter
}

// NewWriter starts the frame on out.
func NewWriter(out io.Writer) (*Writer, error) {
	if _, err := io.WriteString(out, beginLine+"\n"); err != nil {
		return nil, err
	}
	w := &Writer{out: out, lines: &lineWriter{out: out}}
	w.sum.h = sha256.New()
	w.b64 = base64.NewEncoder(base64.StdEncoding, w.lines)
	w.gz = gzip.NewWriter(io.MultiWriter(w.b64, &w.sum))
	w.tar = tar.NewWriter(w.gz)
	return w, nil
}

// Add writes an item's bytes.
func (w *Writer) Add(name string, data []byte) error {
	if err := w.tar.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg}); err != nil {
		return err
	}
	_, err := w.tar.Write(data)
	return err
}

// Fail writes why an item could not be read.
func (w *Writer) Fail(name string, err error, missing bool) error {
	records := map[string]string{recordError: err.Error()}
	if missing {
		records[recordMissing] = "true"
	}
	return w.tar.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Typeflag: tar.TypeReg, PAXRecords: records, Format: tar.FormatPAX})
}

// Close ends the frame.
func (w *Writer) Close() error {
	for _, c := range []io.Closer{w.tar, w.gz, w.b64} {
		if err := c.Close(); err != nil {
			return err
		}
	}
	if err := w.lines.flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w.out, "%s%d %s\n", endPrefix, w.sum.n, hex.EncodeToString(w.sum.h.Sum(nil)))
	return err
}

// Read reads the frame from a log and returns its items.
func Read(log io.Reader) (Entries, error) {
	sc := bufio.NewScanner(log)
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	var (
		data            bytes.Buffer
		begun, ended    bool
		wantN, wantHash string
	)
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		switch {
		case !begun:
			begun = line == beginLine
		case strings.HasPrefix(line, endPrefix):
			ended = true
			wantN, wantHash, _ = strings.Cut(strings.TrimPrefix(line, endPrefix), " ")
		default:
			chunk, err := base64.StdEncoding.DecodeString(line)
			if err != nil {
				return nil, fmt.Errorf("the reader's output is garbled: a line inside the frame is not base64: %.80q", line)
			}
			data.Write(chunk)
		}
		if ended {
			break
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading the reader's output: %w", err)
	}
	switch {
	case !begun:
		return nil, errors.New("the reader's log holds no output")
	case !ended:
		return nil, fmt.Errorf("the reader's output ended after %d bytes, before its end line", data.Len())
	}
	sum := sha256.Sum256(data.Bytes())
	if strconv.Itoa(data.Len()) != wantN || hex.EncodeToString(sum[:]) != wantHash {
		return nil, fmt.Errorf("the reader's output is incomplete: %d bytes with SHA-256 %x, its end line says %s bytes with %s "+
			"(the kubelet may have rotated the container's log: see containerLogMaxSize)", data.Len(), sum, wantN, wantHash)
	}
	gz, err := gzip.NewReader(&data)
	if err != nil {
		return nil, err
	}
	entries := Entries{}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return entries, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading the reader's archive: %w", err)
		}
		e := Entry{Err: h.PAXRecords[recordError], Missing: h.PAXRecords[recordMissing] == "true"}
		if e.Data, err = readAtMost(tr, h.Name); err != nil {
			return nil, err
		}
		entries[h.Name] = e
	}
}

// maxItemBytes bounds what an item holds, read from the volume or from
// the reader's archive, whose gzip would otherwise let a small log expand
// into any size.
var maxItemBytes int64 = 256 << 20

// readAtMost reads r, the item name, to its end, unless it holds more than
// maxItemBytes.
func readAtMost(r io.Reader, name string) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxItemBytes+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > maxItemBytes {
		return nil, fmt.Errorf("%s holds more than the %d bytes the reader reads of an item", name, maxItemBytes)
	}
	return data, nil
}

// Get returns an item's bytes, or an error saying why it has none.
func (e Entries) Get(name string) ([]byte, error) {
	entry, ok := e[name]
	switch {
	case !ok:
		return nil, fmt.Errorf("the reader's output lacks %s", name)
	case entry.Err != "":
		return nil, &ItemError{Name: name, Msg: entry.Err, Missing: entry.Missing}
	}
	return entry.Data, nil
}

// ItemError is why an item could not be read.
type ItemError struct {
	Name, Msg string
	Missing   bool
}

func (e *ItemError) Error() string { return e.Msg }

// lineWriter breaks what it is given into lines of lineWidth.
type lineWriter struct {
	out io.Writer
	buf []byte
}

func (l *lineWriter) Write(p []byte) (int, error) {
	l.buf = append(l.buf, p...)
	for len(l.buf) >= lineWidth {
		if _, err := l.out.Write(append(l.buf[:lineWidth:lineWidth], '\n')); err != nil {
			return 0, err
		}
		l.buf = l.buf[lineWidth:]
	}
	return len(p), nil
}

func (l *lineWriter) flush() error {
	if len(l.buf) == 0 {
		return nil
	}
	_, err := l.out.Write(append(l.buf, '\n'))
	l.buf = nil
	return err
}

// hashCounter sums and counts what passes through it.
type hashCounter struct {
	h interface {
		io.Writer
		Sum([]byte) []byte
	}
	n int64
}

func (c *hashCounter) Write(p []byte) (int, error) {
	c.n += int64(len(p))
	return c.h.Write(p)
}
