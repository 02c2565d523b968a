// Command prepare writes the data set: data/train.txt and data/val.txt.
//
// The text is English-like prose from a small seeded grammar, so the data set
// needs no download and is byte-for-byte the same on every machine. The
// program is idempotent: when both files exist it leaves them alone.
//
// With -out it writes one text from the same grammar instead, with the seed
// and size that -seed and -size give: new prose for a test set, say.
//
//	go run ./prepare -out /tmp/more/text.txt -seed 7 -size 40000
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"tinylm/lm"
)

const (
	dataDir   = "data"
	trainSize = 300_000
	valSize   = 40_000
	// Different seeds keep validation text unseen while drawing from the
	// same distribution as the training text.
	trainSeed = 20240101
	valSeed   = 20240202
)

func main() {
	out := flag.String("out", "", "write one text to this path instead of the data set")
	seed := flag.Uint64("seed", 0, "with -out: the grammar's seed")
	size := flag.Int("size", valSize, "with -out: the text's size in bytes (whole paragraphs, so a little more)")
	flag.Parse()
	var err error
	switch {
	case flag.NArg() > 0:
		err = fmt.Errorf("unexpected arguments %q", flag.Args())
	case *out != "":
		err = writeText(*out, *seed, *size)
	case isSet("seed") || isSet("size"):
		err = errors.New("-seed and -size need -out")
	default:
		err = run()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "prepare:", err)
		os.Exit(1)
	}
}

// isSet reports whether the flag was given on the command line.
func isSet(name string) bool {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

func run() error {
	trainPath := filepath.Join(dataDir, "train.txt")
	valPath := filepath.Join(dataDir, "val.txt")
	if exists(trainPath) && exists(valPath) {
		fmt.Println("data present:", trainPath, valPath)
		return nil
	}
	for _, f := range []struct {
		path string
		size int
		seed uint64
	}{{trainPath, trainSize, trainSeed}, {valPath, valSize, valSeed}} {
		if err := writeText(f.path, f.seed, f.size); err != nil {
			return err
		}
	}
	return nil
}

// writeText writes size bytes (rounded up to whole paragraphs) of prose from
// the grammar with seed to path.
func writeText(path string, seed uint64, size int) error {
	if size < 1 {
		return fmt.Errorf("size %d: must be at least 1", size)
	}
	text := generate(seed, size)
	if _, err := lm.Encode(text); err != nil {
		return fmt.Errorf("generated text for %s: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	if err := writeAtomic(path, text); err != nil {
		return err
	}
	fmt.Printf("wrote %s (%d bytes)\n", path, len(text))
	return nil
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// writeAtomic renames a complete temporary file into place, so that an
// interrupted run never leaves a partial file that a later run would skip.
func writeAtomic(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// generate returns whole paragraphs of at least size bytes.
func generate(seed uint64, size int) []byte {
	g := &grammar{rng: splitmix{state: seed}}
	var b strings.Builder
	for b.Len() < size {
		b.WriteString(g.paragraph())
		b.WriteByte('\n')
	}
	return []byte(b.String())
}

// splitmix is SplitMix64: a tiny generator whose output is fixed by its
// definition, unlike math/rand, whose streams may change between Go releases.
type splitmix struct{ state uint64 }

func (s *splitmix) next() uint64 {
	s.state += 0x9e3779b97f4a7c15
	z := s.state
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

func (s *splitmix) intn(n int) int { return int(s.next() % uint64(n)) }

var (
	names = []string{
		"Ada", "Bram", "Clara", "Dorian", "Elsie", "Felix", "Greta", "Hugo",
		"Iris", "Jonah", "Lena", "Milo", "Nora", "Otto", "Petra", "Rosa",
		"Silas", "Tess", "Walter", "Yara",
	}
	agents = []string{
		"miller", "baker", "sailor", "farmer", "weaver", "shepherd",
		"merchant", "soldier", "teacher", "fisherman", "painter", "traveller",
		"horse", "dog", "cat", "goat", "crow", "fox",
	}
	things = []string{
		"basket", "lamp", "letter", "candle", "key", "coat", "boat", "bell",
		"book", "map", "cup", "rope", "ring", "box", "loaf", "kettle",
		"ladder", "blanket", "window", "wheel",
	}
	adjectives = []string{
		"old", "young", "quiet", "bright", "tired", "clever", "small", "tall",
		"green", "cold", "warm", "heavy", "gentle", "proud", "patient",
		"hungry", "dark", "red", "silver", "narrow",
	}
	places = []string{
		"the market", "the river", "the old mill", "the harbour",
		"the village", "the forest", "the church", "the bridge", "the hill",
		"the garden", "the inn", "the station", "the school", "the farm",
		"the shore", "the valley",
	}
	transitive = []string{
		"carried", "found", "lost", "mended", "painted", "sold", "bought",
		"opened", "closed", "watched", "followed", "remembered", "cleaned",
		"counted", "built", "carved", "hid", "kept", "wrapped", "dropped",
	}
	intransitive = []string{
		"walked", "waited", "slept", "sang", "laughed", "rested", "listened",
		"worked", "wandered", "hurried", "stayed", "returned",
	}
	adverbs = []string{
		"slowly", "quietly", "early", "late", "together", "alone", "again",
		"carefully", "happily", "at once", "for a while", "without a word",
	}
	prepositions = []string{
		"to", "toward", "past", "across", "near", "behind", "beside", "along",
	}
	times = []string{
		"morning", "evening", "night", "winter", "spring", "summer",
		"autumn", "afternoon",
	}
	weather = []string{
		"the rain fell", "the wind rose", "the snow came", "the sun was warm",
		"the fog lifted", "the sky was grey", "the storm passed",
	}
	greetings = []string{
		"Good morning", "Hello", "Come in", "Look here", "Wait", "Hurry",
		"Be careful", "Well done",
	}
	counts = []string{
		"two", "three", "four", "five", "six", "seven", "ten", "twelve",
	}
	connectives = []string{"and then", "but", "so", "while", "before", "after"}
	proverbs    = []string{
		"A stitch in time saves nine.",
		"Still waters run deep.",
		"Many hands make light work.",
		"The early bird catches the worm.",
		"Where there is smoke, there is fire.",
		"A rolling stone gathers no moss.",
		"Better late than never.",
		"Every cloud has a silver lining.",
		"Make hay while the sun shines.",
		"Actions speak louder than words.",
	}
)

// grammar strings sentences from templates and word lists.
type grammar struct{ rng splitmix }

func (g *grammar) pick(words []string) string { return words[g.rng.intn(len(words))] }

func (g *grammar) paragraph() string {
	n := 3 + g.rng.intn(5)
	sentences := make([]string, n)
	for i := range sentences {
		sentences[i] = g.sentence()
	}
	return strings.Join(sentences, " ")
}

func (g *grammar) sentence() string {
	switch g.rng.intn(12) {
	case 0:
		return capitalize(fmt.Sprintf("the %s %s %s the %s %s %s.",
			g.pick(adjectives), g.pick(agents), g.pick(transitive), g.pick(things), g.pick(prepositions), g.pick(places)))
	case 1:
		return fmt.Sprintf("%s %s %s %s %s.",
			g.pick(names), g.pick(intransitive), g.pick(adverbs), g.pick(prepositions), g.pick(places))
	case 2:
		return fmt.Sprintf("In the %s, %s, and the %ss %s %s.",
			g.pick(times), g.pick(weather), g.pick(agents), g.pick(intransitive), g.pick(adverbs))
	case 3:
		return fmt.Sprintf("'%s, %s!' said the %s %s.",
			g.pick(greetings), g.pick(names), g.pick(adjectives), g.pick(agents))
	case 4:
		return fmt.Sprintf("'Where is the %s %s?' asked %s.",
			g.pick(adjectives), g.pick(things), g.pick(names))
	case 5:
		return fmt.Sprintf("%s and %s %s a %s %s; then they %s %s %s.",
			g.pick(names), g.pick(names), g.pick(transitive), g.pick(adjectives), g.pick(things),
			g.pick(intransitive), g.pick(prepositions), g.pick(places))
	case 6:
		return fmt.Sprintf("There was a %s %s near %s, and nobody knew who had %s it.",
			g.pick(adjectives), g.pick(things), g.pick(places), g.pick(transitive))
	case 7:
		return fmt.Sprintf("When %s, %s %s the %s %s the %s %s %s.",
			g.pick(weather), g.pick(names), g.pick(transitive), g.pick(things),
			g.pick(connectives), g.pick(agents), g.pick(intransitive), g.pick(adverbs))
	case 8:
		return fmt.Sprintf("Every %s the %s %s %s %s and %s %s %ss.",
			g.pick(times), g.pick(agents), g.pick(intransitive), g.pick(prepositions), g.pick(places),
			g.pick(transitive), g.pick(counts), g.pick(things))
	case 9:
		return fmt.Sprintf("It was a %s %s: %s.", g.pick(adjectives), g.pick(times), g.pick(weather))
	case 10:
		return fmt.Sprintf("'I have %s the %s,' said %s, 'and I will not do it again.'",
			g.pick(transitive), g.pick(things), g.pick(names))
	default:
		return g.pick(proverbs)
	}
}

func capitalize(s string) string { return strings.ToUpper(s[:1]) + s[1:] }
