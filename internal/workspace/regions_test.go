package workspace

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseRegions(t *testing.T) {
	src := "a\n# autoresearch:fixed-begin seed\nSEED = 1\n# autoresearch:fixed-end\nb\n/* autoresearch:fixed-begin */ x /* autoresearch:fixed-end */\n"
	got, err := parseRegions("f", src)
	if err != nil {
		t.Fatal(err)
	}
	want := []Region{
		{Path: "f", Start: 2, End: 4, Begin: "# autoresearch:fixed-begin seed", text: "# autoresearch:fixed-begin seed\nSEED = 1\n# autoresearch:fixed-end"},
		{Path: "f", Start: 6, End: 6, Begin: "/* autoresearch:fixed-begin */ x /* autoresearch:fixed-end */", text: "/* autoresearch:fixed-begin */ x /* autoresearch:fixed-end */"},
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(Region{})); diff != "" {
		t.Errorf("regions (-want +got):\n%s", diff)
	}
	for src, msg := range map[string]string{
		"# autoresearch:fixed-begin\nx\n": "begin marker on line 1 has no end marker",
		"x\n# autoresearch:fixed-end\n":   "end marker on line 2 has no begin marker",
		"# autoresearch:fixed-begin\n# autoresearch:fixed-begin\n# autoresearch:fixed-end\n": "begin marker on line 2 comes before the end of the region that begins on line 1",
	} {
		if _, err := parseRegions("f", src); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("parseRegions(%q) = %v, want an error holding %q", src, err, msg)
		}
	}
}

func TestFixedRegions(t *testing.T) {
	ctx := context.Background()
	w, base := newPristineExperiment(t)
	got, err := w.FixedRegions(ctx, base, pristineFixed)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, r := range got {
		lines = append(lines, r.Path+":"+r.Lines()+":"+r.Begin)
	}
	want := []string{
		"train.py:2-4:# autoresearch:fixed-begin seed",
		"train.py:6:// autoresearch:fixed-begin autoresearch:fixed-end one line",
	}
	if diff := cmp.Diff(want, lines); diff != "" {
		t.Errorf("regions (-want +got):\n%s", diff)
	}

	// A fixed file is whole; its markers are not regions.
	if got, err := w.FixedRegions(ctx, base, append([]string{"train.py"}, pristineFixed...)); err != nil || len(got) != 0 {
		t.Errorf("regions of a fixed file: %v, %v", got, err)
	}

	// Unpaired markers break the protocol.
	writeFiles(t, w.Dir, map[string]string{"model/__init__.py": "# autoresearch:fixed-begin\n"})
	broken, err := w.Seal(ctx, 1, base)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.FixedRegions(ctx, broken, pristineFixed); err == nil || !strings.Contains(err.Error(), "fixed region markers of model/__init__.py: the begin marker on line 1 has no end marker") {
		t.Errorf("unpaired markers: %v", err)
	}
}

// TestRegionRules runs each edit of the variable file train.py through
// CheckCompliance.
func TestRegionRules(t *testing.T) {
	orig := pristineFiles["examples/x/train.py"]
	region2 := "// autoresearch:fixed-begin autoresearch:fixed-end one line\n"
	cases := map[string]struct {
		train string            // the new train.py; "" leaves it
		files map[string]string // more files to write
		want  string            // words of train.py's violation; "" for none
	}{
		"outside the regions":                 {train: strings.Replace(orig, "lr = 0.1", "lr = 0.3\nimport math", 1)},
		"lines added above shift the regions": {train: "# a new comment\n\n" + orig},
		"inside a region":                     {train: strings.Replace(orig, "SEED = 1", "SEED = 7", 1), want: "fixed region 1 of train.py (lines 2-4 in the base) changed"},
		"a line added inside a region":        {train: strings.Replace(orig, "SEED = 1\n", "SEED = 1\nSEED = 7\n", 1), want: "fixed region 1 of train.py (lines 2-4 in the base) changed"},
		"a one-line region edited":            {train: strings.Replace(orig, "one line", "one lie", 1), want: "fixed region 2 of train.py (lines 6 in the base) changed"},
		"end marker moved down":               {train: strings.Replace(orig, "# autoresearch:fixed-end\nlr = 0.1\n", "lr = 0.1\n# autoresearch:fixed-end\n", 1), want: "fixed region 1 of train.py (lines 2-4 in the base) changed"},
		"begin marker removed":                {train: strings.Replace(orig, "# autoresearch:fixed-begin seed\n", "", 1), want: "fixed region markers of train.py no longer pair up: the end marker on line 3 has no begin marker"},
		"both markers removed":                {train: strings.Replace(strings.Replace(orig, "# autoresearch:fixed-begin seed\n", "", 1), "# autoresearch:fixed-end\n", "", 1), want: "fixed region 1 of train.py (lines 2-4 in the base) changed"},
		"region duplicated":                   {train: orig + "# autoresearch:fixed-begin seed\nSEED = 1\n# autoresearch:fixed-end\n", want: "fixed region 3 of train.py (lines 7-9) was added"},
		"a region removed at the end":         {train: strings.Replace(orig, region2, "", 1), want: "fixed region 2 of train.py (lines 6 in the base) was removed"},
		// Regions pin text, not where it runs: moving a whole region is not seen.
		"a region moved, text and order kept": {train: strings.Replace(orig, region2, "", 1) + "x = 2\n" + region2},
		"regions swapped":                     {train: region2 + strings.Replace(orig, region2, "", 1), want: "fixed region 1 of train.py (lines 2-4 in the base) changed"},
		"a region added":                      {train: orig + "# autoresearch:fixed-begin mine\n# autoresearch:fixed-end\n", want: "fixed region 3 of train.py (lines 7-8) was added"},
		"line endings changed to CRLF":        {train: strings.ReplaceAll(orig, "\n", "\r\n"), want: "fixed region 1 of train.py (lines 2-4 in the base) changed"},
		"a marker hidden behind a lone CR":    {train: strings.Replace(orig, "SEED = 1", "SEED = 1\r# autoresearch:fixed-end\rSEED = 7", 1), want: "fixed region markers of train.py no longer pair up"},
		"a new file with a region": {
			files: map[string]string{"tools/helper.py": "# autoresearch:fixed-begin\nx = 1\n# autoresearch:fixed-end\n"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			w, base := newPristineExperiment(t)
			if tc.train != "" {
				writeFiles(t, w.Dir, map[string]string{"train.py": tc.train})
			}
			writeFiles(t, w.Dir, tc.files)
			report, err := sealAndCheck(context.Background(), t, w, base, pristineFixed, pristineVariable)
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]string{}
			if tc.want != "" {
				want["train.py"] = tc.want
			}
			if tc.files != nil {
				want["tools/helper.py"] = "fixed region 1 of tools/helper.py (lines 1-3) was added; only the start commit marks fixed regions"
			}
			checkViolations(t, report.Violations, want)
		})
	}
}

func TestRegionsOfADeletedFile(t *testing.T) {
	if got := compareRegions("t.py", ChangeDeleted, "# autoresearch:fixed-begin\n# autoresearch:fixed-end\n", ""); !strings.Contains(got, "deleted t.py, which holds fixed region 1 (lines 1-2)") {
		t.Errorf("deleted: %q", got)
	}
	if got := compareRegions("t.py", ChangeModified, "# autoresearch:fixed-end\n", "x"); !strings.Contains(got, "broken in the base") {
		t.Errorf("broken base: %q", got)
	}
}
