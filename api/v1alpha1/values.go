package v1alpha1

import (
	"encoding/json"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Decimal is a number written as a decimal string, such as "0.95" or
// "-1.5e-3": the API carries no floats, so a value reads back exactly as
// it was written. An exponent has at most two digits, so that every
// Decimal is a finite float64 ("1e999" would be infinite).
// +kubebuilder:validation:MinLength=1
// +kubebuilder:validation:MaxLength=64
// +kubebuilder:validation:XValidation:rule="self.matches('^[-+]?([0-9]+([.][0-9]*)?|[.][0-9]+)([eE][-+]?[0-9]{1,2})?$')",message="must be a finite decimal number such as 0.95 or -1.5e-3, with an exponent of at most two digits"
type Decimal string

// NonNegativeDecimal is a Decimal of zero or more, such as "0.001".
// +kubebuilder:validation:MinLength=1
// +kubebuilder:validation:MaxLength=64
// +kubebuilder:validation:XValidation:rule="self.matches('^[+]?([0-9]+([.][0-9]*)?|[.][0-9]+)([eE][-+]?[0-9]{1,2})?$')",message="must be a finite non-negative decimal number such as 0.001 or 1e-5, with an exponent of at most two digits"
type NonNegativeDecimal string

// Duration is a length of time from one second to a week (MaxDuration),
// written as a Go duration such as "90s", "5m" or "1h30m". The bound keeps
// every deadline derived from it (twice it, plus a buffer) far from
// overflowing; the length check comes first so that a number too large
// for a duration is refused by the pattern, not by a conversion error.
// +kubebuilder:validation:Type=string
// +kubebuilder:validation:XValidation:rule="size(self) <= 32 && self.matches('^([0-9]{1,9}([.][0-9]{1,9})?(ms|s|m|h))+$') && duration(self) >= duration('1s') && duration(self) <= duration('168h')",message="must be a duration from 1s to 168h such as 90s, 5m or 1h30m"
type Duration metav1.Duration

// MaxDuration is the longest Duration the API accepts.
const MaxDuration = 168 * time.Hour

// MarshalJSON writes the duration as metav1.Duration does: "1h30m0s".
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.Duration.String()) }

// UnmarshalJSON reads a duration string as metav1.Duration does.
func (d *Duration) UnmarshalJSON(b []byte) error {
	return (*metav1.Duration)(d).UnmarshalJSON(b)
}

// ToUnstructured gives the duration as its string, for the unstructured
// converter.
func (d Duration) ToUnstructured() any { return d.Duration.String() }

// RelativePath is a clean path relative to the experiment directory, such
// as "train/main.go": no leading slash, no "." or ".." segments, no empty
// segments, so that two spellings of one file cannot slip past a rule.
// +kubebuilder:validation:MinLength=1
// +kubebuilder:validation:MaxLength=512
// +kubebuilder:validation:XValidation:rule="!self.startsWith('/') && !self.endsWith('/') && !self.contains('//') && !self.matches('(^|/)[.][.]?(/|$)')",message="must be a clean relative path inside the experiment directory, such as train/main.go (no leading /, no . or .. segments, no //)"
type RelativePath string

// PathPattern names fixed files relative to the experiment directory: a
// file ("eval.py"), a directory with everything under it ("eval" or
// "eval/"), or a glob matched segment by segment as Go's path.Match does,
// where a "**" segment matches any number of segments ("eval/**",
// "data/*.py"). Like a RelativePath it has no leading slash, no "." or ".."
// segments and no empty segments.
// +kubebuilder:validation:MinLength=1
// +kubebuilder:validation:MaxLength=512
// +kubebuilder:validation:XValidation:rule="!self.startsWith('/') && !self.contains('//') && !self.matches('(^|/)[.][.]?(/|$)')",message="must be a clean relative path or glob inside the experiment directory, such as eval.py, eval/ or eval/**/*.py (no leading /, no . or .. segments, no //)"
// +kubebuilder:validation:XValidation:rule=`self.matches('^(?:(?:[^\\\\/\\[]|\\\\[^/]|\\[(?:\\^(?:[^\\\\/\\]-]|\\\\[^/])|[^\\\\/\\]^-]|\\\\[^/])(?:-(?:[^\\\\/\\]-]|\\\\[^/]))?(?:(?:[^\\\\/\\]-]|\\\\[^/])(?:-(?:[^\\\\/\\]-]|\\\\[^/]))?)*\\])|/)*$')`,message="is not a valid glob: close each [ with ] and put a character after each \\, such as data/[a-c]*.csv"
// +kubebuilder:validation:XValidation:rule="!self.matches('[^/][*][*]|[*][*][^/]')",message="** must be a whole path segment, such as eval/**/*.py"
type PathPattern string

// FunctionRef names a Python function as module:function, such as
// "kernels.attention:flash_forward".
// +kubebuilder:validation:MaxLength=512
// +kubebuilder:validation:XValidation:rule="self.matches('^[A-Za-z_][A-Za-z0-9_.]*:[A-Za-z_][A-Za-z0-9_]*$')",message="must name a function as module:function, such as kernels.attention:flash_forward"
type FunctionRef string
