package lm

import (
	"math"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestGradient compares the analytic gradient with central differences of
// the loss, parameter by parameter.
func TestGradient(t *testing.T) {
	m, err := New(Config{Context: 3, Embed: 4, Hidden: 5}, 7)
	if err != nil {
		t.Fatal(err)
	}
	ids, err := Encode([]byte("The fox ran.\nIt hid!"))
	if err != nil {
		t.Fatal(err)
	}
	// Position 1 has padding in its context, the others do not.
	positions := []int{1, 5, 9, 14}
	grad := m.ZeroLike()
	m.Gradient(ids, positions, grad)

	scratch := m.ZeroLike()
	const eps = 1e-5
	for ti, param := range m.Params() {
		for i := range param {
			orig := param[i]
			param[i] = orig + eps
			up := m.Gradient(ids, positions, scratch)
			param[i] = orig - eps
			down := m.Gradient(ids, positions, scratch)
			param[i] = orig
			numeric := (up - down) / (2 * eps)
			if got := grad.Params()[ti][i]; math.Abs(got-numeric) > 1e-6+1e-4*math.Abs(numeric) {
				t.Fatalf("tensor %d index %d: gradient %g, numeric %g", ti, i, got, numeric)
			}
		}
	}
}

func TestSaveLoad(t *testing.T) {
	m, err := New(Config{Context: 2, Embed: 3, Hidden: 4}, 1)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "ckpt", "model.bin")
	if err := m.Save(path); err != nil {
		t.Fatal(err)
	}
	got, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(m, got) {
		t.Errorf("Load(Save(m)) differs from m")
	}
}

func TestLoadMissing(t *testing.T) {
	if _, err := Load(filepath.Join(t.TempDir(), "none.bin")); err == nil {
		t.Fatal("Load() of a missing file succeeded")
	}
}

func TestBitsPerByte(t *testing.T) {
	m, err := New(Config{Context: 2, Embed: 3, Hidden: 4}, 1)
	if err != nil {
		t.Fatal(err)
	}
	// An untrained model is close to uniform over the alphabet.
	bpb, err := m.BitsPerByte([]byte("hello world\n"))
	if err != nil {
		t.Fatal(err)
	}
	if uniform := math.Log2(float64(VocabSize)); math.Abs(bpb-uniform) > 0.2 {
		t.Errorf("BitsPerByte() = %v, want about %v", bpb, uniform)
	}
	if _, err := m.BitsPerByte([]byte("tab\there")); err == nil || !strings.Contains(err.Error(), "not in the alphabet") {
		t.Errorf("BitsPerByte() of a tab: error = %v, want one about the alphabet", err)
	}
}

func TestNewRejectsEmptyShape(t *testing.T) {
	if _, err := New(Config{Context: 0, Embed: 8, Hidden: 8}, 1); err == nil {
		t.Fatal("New() with no context succeeded")
	}
}
