package workspace

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/autoresearch-dev/autoresearch-operator/internal/text"
)

// ResultRow is one line of results.tsv, in the format of karpathy's
// autoresearch so that the tools written for it read ours.
type ResultRow struct {
	// Commit is the 7-character short hash the round was evaluated at.
	Commit string
	// Value is the metric value; crashed rounds record 0.
	Value string
	// MemoryGB is the peak accelerator memory in GB; "0.0" when unknown.
	MemoryGB string
	// Status is keep, discard or crash.
	Status      string
	Description string
}

const statusCrash = "crash"

func resultsHeader(metric string) string {
	return strings.Join([]string{"commit", tsvField(metric), "memory_gb", "status", "description"}, "\t") + "\n"
}

var tsvUnsafe = strings.NewReplacer("\t", " ", "\r\n", " ", "\n", " ", "\r", " ")

func tsvField(s string) string { return strings.TrimSpace(tsvUnsafe.Replace(s)) }

// AppendResult appends r to the results.tsv at path, writing the header
// first when the file does not exist or is empty.
func AppendResult(path, metric string, r ResultRow) error {
	var prefix string
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist) || (err == nil && len(data) == 0):
		prefix = resultsHeader(metric)
	case err != nil:
		return err
	case data[len(data)-1] != '\n':
		prefix = "\n"
	}
	value := formatNumber(r.Value, 6)
	if r.Status == statusCrash || value == "" {
		value = formatNumber("0", 6)
	}
	memory := formatNumber(r.MemoryGB, 1)
	if memory == "" {
		memory = "0.0"
	}
	line := strings.Join([]string{text.ShortCommit(tsvField(r.Commit)), value, memory, tsvField(r.Status), tsvField(r.Description)}, "\t")

	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(prefix + line + "\n"); err != nil {
		return fmt.Errorf("appending to %s: %w", path, errors.Join(err, f.Close()))
	}
	return f.Close()
}

// formatNumber writes a finite number with the given decimals and leaves
// anything else as it is, made safe for a TSV field.
func formatNumber(s string, decimals int) string {
	s = tsvField(s)
	if v, err := strconv.ParseFloat(s, 64); err == nil && !math.IsInf(v, 0) && !math.IsNaN(v) {
		return strconv.FormatFloat(v, 'f', decimals, 64)
	}
	return s
}
