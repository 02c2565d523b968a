package metric

import (
	"math"
	"strings"
	"testing"
)

func TestFormat(t *testing.T) {
	cases := map[string]struct {
		in   float64
		want string
	}{
		"zero":                      {in: 0, want: "0"},
		"negative zero":             {in: math.Copysign(0, -1), want: "0"},
		"integer":                   {in: 42, want: "42"},
		"negative":                  {in: -1.5, want: "-1.5"},
		"shortest round trip":       {in: 0.30000000000000004, want: "0.30000000000000004"},
		"metric value":              {in: 0.9979, want: "0.9979"},
		"smallest plain magnitude":  {in: 1e-6, want: "0.000001"},
		"below plain range":         {in: 9.5e-7, want: "9.5e-07"},
		"largest plain magnitude":   {in: 999999999999999, want: "999999999999999"},
		"above plain range":         {in: 1e15, want: "1e+15"},
		"large negative":            {in: -2.5e20, want: "-2.5e+20"},
		"largest float":             {in: math.MaxFloat64, want: "1.7976931348623157e+308"},
		"smallest denormal":         {in: math.SmallestNonzeroFloat64, want: "5e-324"},
		"NaN":                       {in: math.NaN(), want: "NaN"},
		"positive infinity":         {in: math.Inf(1), want: "+Inf"},
		"negative infinity":         {in: math.Inf(-1), want: "-Inf"},
		"plain with many fractions": {in: 123456.789012, want: "123456.789012"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := Format(tc.in); got != tc.want {
				t.Errorf("Format(%v) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestParseDecimal(t *testing.T) {
	cases := map[string]struct {
		in      string
		want    float64
		wantErr string
	}{
		"integer":             {in: "42", want: 42},
		"decimal":             {in: "0.9979", want: 0.9979},
		"negative":            {in: "-1.5", want: -1.5},
		"plus sign":           {in: "+2", want: 2},
		"leading dot":         {in: ".5", want: 0.5},
		"exponent":            {in: "1e-07", want: 1e-7},
		"capital exponent":    {in: "2.5E+20", want: 2.5e20},
		"underflow is zero":   {in: "1e-400", want: 0},
		"NaN":                 {in: "NaN", want: math.NaN()},
		"lower case nan":      {in: "nan", want: math.NaN()},
		"positive infinity":   {in: "+Inf", want: math.Inf(1)},
		"unsigned infinity":   {in: "Inf", want: math.Inf(1)},
		"negative infinity":   {in: "-Inf", want: math.Inf(-1)},
		"empty":               {in: "", wantErr: "empty decimal string"},
		"word":                {in: "abc", wantErr: `"abc" is not a decimal number`},
		"trailing text":       {in: "1.5x", wantErr: `"1.5x" is not a decimal number`},
		"surrounding spaces":  {in: " 1.5", wantErr: `" 1.5" is not a decimal number`},
		"trailing dot":        {in: "1.", wantErr: `"1." is not a decimal number`},
		"incomplete exponent": {in: "1e", wantErr: `"1e" is not a decimal number`},
		"hexadecimal":         {in: "0x10", wantErr: `"0x10" is not a decimal number`},
		"underscores":         {in: "1_000", wantErr: `"1_000" is not a decimal number`},
		"sign only":           {in: "-", wantErr: `"-" is not a decimal number`},
		"out of range":        {in: "1e999", wantErr: `"1e999" is out of range for a 64-bit float`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := ParseDecimal(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ParseDecimal(%q) = %v, %v; want error containing %q", tc.in, got, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseDecimal(%q) error = %v", tc.in, err)
			}
			if got != tc.want && !(math.IsNaN(got) && math.IsNaN(tc.want)) {
				t.Errorf("ParseDecimal(%q) = %v, want %v", tc.in, got, tc.want)
			}
		})
	}
}

func TestFormatParseDecimalRoundTrip(t *testing.T) {
	values := map[string]float64{
		"third":                  1.0 / 3,
		"just below plain range": math.Nextafter(1e-6, 0),
		"just at plain range":    1e-6,
		"just below exponent":    math.Nextafter(1e15, 0),
		"just at exponent":       1e15,
		"largest float":          math.MaxFloat64,
		"smallest denormal":      math.SmallestNonzeroFloat64,
		"negative fraction":      -0.000123456789,
		"large integer":          float64(1 << 53),
		"positive infinity":      math.Inf(1),
		"negative infinity":      math.Inf(-1),
	}
	for name, v := range values {
		t.Run(name, func(t *testing.T) {
			s := Format(v)
			got, err := ParseDecimal(s)
			if err != nil {
				t.Fatalf("ParseDecimal(Format(%v) = %q) error = %v", v, s, err)
			}
			if got != v {
				t.Errorf("ParseDecimal(Format(%v) = %q) = %v", v, s, got)
			}
		})
	}
}
