// Package lm is a small character-level language model in the style of
// Bengio et al. (2003): the embeddings of the last Context characters feed one
// tanh hidden layer, whose output a softmax turns into the distribution of the
// next character.
//
// The package owns the model's shape, its forward and backward pass, the
// checkpoint format and the bits-per-byte measure that the fixed evaluation
// reports. How the model is trained is up to the caller.
package lm

import (
	"encoding/gob"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
)

// Alphabet lists every byte the model can read or predict. Each symbol is one
// byte, so bits per symbol are bits per byte.
const Alphabet = "\n !',.:;?ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// VocabSize is the number of symbols the model predicts.
const VocabSize = len(Alphabet)

// pad is the embedding row of the positions before the start of a text; it is
// an input only, never a prediction.
const pad = VocabSize

var symbolOf = func() [256]int {
	var t [256]int
	for i := range t {
		t[i] = -1
	}
	for i := range len(Alphabet) {
		t[Alphabet[i]] = i
	}
	return t
}()

// Encode maps text to symbol ids; every byte must be in Alphabet.
func Encode(text []byte) ([]int, error) {
	ids := make([]int, len(text))
	for i, c := range text {
		id := symbolOf[c]
		if id < 0 {
			return nil, fmt.Errorf("byte %q at offset %d is not in the alphabet", c, i)
		}
		ids[i] = id
	}
	return ids, nil
}

// Config is the model's shape.
type Config struct {
	// Context is how many preceding characters the model sees.
	Context int
	// Embed is the width of each character's embedding.
	Embed int
	// Hidden is the number of tanh units.
	Hidden int
}

// Validate rejects shapes the model cannot have.
func (c Config) Validate() error {
	if c.Context < 1 || c.Embed < 1 || c.Hidden < 1 {
		return fmt.Errorf("config %+v: Context, Embed and Hidden must be at least 1", c)
	}
	return nil
}

// Model holds the configuration and the parameters. The same type holds
// gradients, so an optimiser can walk both with Params.
type Model struct {
	Config Config
	// Emb is (VocabSize+1) × Embed; the last row embeds the padding.
	Emb []float64
	// W1 is (Context·Embed) × Hidden, B1 is Hidden.
	W1, B1 []float64
	// W2 is Hidden × VocabSize, B2 is VocabSize.
	W2, B2 []float64
}

// New returns a model with small random weights drawn from seed.
func New(cfg Config, seed uint64) (*Model, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	m := zeros(cfg)
	rng := rand.New(rand.NewPCG(seed, 0))
	fill := func(w []float64, scale float64) {
		for i := range w {
			w[i] = rng.NormFloat64() * scale
		}
	}
	fill(m.Emb, 1)
	fill(m.W1, 1/math.Sqrt(float64(cfg.Context*cfg.Embed)))
	// Small output weights start the model near the uniform distribution.
	fill(m.W2, 0.1/math.Sqrt(float64(cfg.Hidden)))
	return m, nil
}

func zeros(cfg Config) *Model {
	return &Model{
		Config: cfg,
		Emb:    make([]float64, (VocabSize+1)*cfg.Embed),
		W1:     make([]float64, cfg.Context*cfg.Embed*cfg.Hidden),
		B1:     make([]float64, cfg.Hidden),
		W2:     make([]float64, cfg.Hidden*VocabSize),
		B2:     make([]float64, VocabSize),
	}
}

// ZeroLike returns a model of the same shape with all parameters zero, e.g.
// to hold gradients or optimiser state.
func (m *Model) ZeroLike() *Model { return zeros(m.Config) }

// Params returns the parameter tensors in a fixed order, so that
// m.Params()[i] and grad.Params()[i] correspond.
func (m *Model) Params() [][]float64 { return [][]float64{m.Emb, m.W1, m.B1, m.W2, m.B2} }

// scratch holds one example's activations, reused across examples.
type scratch struct {
	ctx    []int
	x      []float64
	h      []float64
	logits []float64
	dh     []float64
	dx     []float64
}

func (m *Model) newScratch() *scratch {
	c := m.Config
	return &scratch{
		ctx:    make([]int, c.Context),
		x:      make([]float64, c.Context*c.Embed),
		h:      make([]float64, c.Hidden),
		logits: make([]float64, VocabSize),
		dh:     make([]float64, c.Hidden),
		dx:     make([]float64, c.Context*c.Embed),
	}
}

// forward predicts the symbol at pos from the symbols before it and leaves
// the softmax probabilities in s.logits.
func (m *Model) forward(ids []int, pos int, s *scratch) {
	c := m.Config
	for j := range c.Context {
		p := pos - c.Context + j
		if p < 0 {
			s.ctx[j] = pad
		} else {
			s.ctx[j] = ids[p]
		}
		copy(s.x[j*c.Embed:(j+1)*c.Embed], m.Emb[s.ctx[j]*c.Embed:(s.ctx[j]+1)*c.Embed])
	}
	copy(s.h, m.B1)
	for i, xi := range s.x {
		row := m.W1[i*c.Hidden : (i+1)*c.Hidden]
		for k, w := range row {
			s.h[k] += xi * w
		}
	}
	for k := range s.h {
		s.h[k] = math.Tanh(s.h[k])
	}
	copy(s.logits, m.B2)
	for k, hk := range s.h {
		row := m.W2[k*VocabSize : (k+1)*VocabSize]
		for v, w := range row {
			s.logits[v] += hk * w
		}
	}
	softmax(s.logits)
}

func softmax(z []float64) {
	top := z[0]
	for _, v := range z[1:] {
		top = max(top, v)
	}
	var sum float64
	for i, v := range z {
		z[i] = math.Exp(v - top)
		sum += z[i]
	}
	for i := range z {
		z[i] /= sum
	}
}

// Gradient sets grad to the gradient of the mean cross-entropy (in nats) of
// predicting ids[p] for every p in positions, and returns that mean loss.
func (m *Model) Gradient(ids, positions []int, grad *Model) float64 {
	for _, t := range grad.Params() {
		clear(t)
	}
	if len(positions) == 0 {
		return 0
	}
	c := m.Config
	s := m.newScratch()
	scale := 1 / float64(len(positions))
	var loss float64
	for _, pos := range positions {
		m.forward(ids, pos, s)
		y := ids[pos]
		loss -= math.Log(s.logits[y])
		// d(loss)/d(logits) = p - onehot(y); reuse the probabilities in place.
		dz := s.logits
		dz[y] -= 1
		for v := range dz {
			dz[v] *= scale
			grad.B2[v] += dz[v]
		}
		for k, hk := range s.h {
			row := m.W2[k*VocabSize : (k+1)*VocabSize]
			grow := grad.W2[k*VocabSize : (k+1)*VocabSize]
			var d float64
			for v, w := range row {
				grow[v] += hk * dz[v]
				d += w * dz[v]
			}
			s.dh[k] = d * (1 - hk*hk)
			grad.B1[k] += s.dh[k]
		}
		for i, xi := range s.x {
			row := m.W1[i*c.Hidden : (i+1)*c.Hidden]
			grow := grad.W1[i*c.Hidden : (i+1)*c.Hidden]
			var d float64
			for k, w := range row {
				grow[k] += xi * s.dh[k]
				d += w * s.dh[k]
			}
			s.dx[i] = d
		}
		for j, id := range s.ctx {
			g := grad.Emb[id*c.Embed : (id+1)*c.Embed]
			for e := range g {
				g[e] += s.dx[j*c.Embed+e]
			}
		}
	}
	return loss * scale
}

// BitsPerByte is the model's mean code length for text, in bits per byte.
// Every byte is scored, the first ones with padding for the missing context.
func (m *Model) BitsPerByte(text []byte) (float64, error) {
	if len(text) == 0 {
		return 0, errors.New("empty text")
	}
	ids, err := Encode(text)
	if err != nil {
		return 0, err
	}
	s := m.newScratch()
	var bits float64
	for pos, y := range ids {
		m.forward(ids, pos, s)
		bits -= math.Log2(s.logits[y])
	}
	return bits / float64(len(text)), nil
}

// checkpoint is the file format: the alphabet guards against loading a
// model whose symbol ids mean other characters.
type checkpoint struct {
	Alphabet string
	Model    Model
}

// Save writes the model to path, creating its directory. The file appears
// whole or not at all.
func (m *Model) Save(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".model-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := gob.NewEncoder(tmp).Encode(checkpoint{Alphabet: Alphabet, Model: *m}); err != nil {
		tmp.Close()
		return fmt.Errorf("encode checkpoint: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// Load reads a checkpoint written by Save and checks that its tensors fit
// its configuration.
func Load(path string) (*Model, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var ck checkpoint
	if err := gob.NewDecoder(f).Decode(&ck); err != nil {
		return nil, fmt.Errorf("decode checkpoint %s: %w", path, err)
	}
	if ck.Alphabet != Alphabet {
		return nil, fmt.Errorf("checkpoint %s was trained on another alphabet", path)
	}
	m := &ck.Model
	if err := m.Config.Validate(); err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", path, err)
	}
	want := zeros(m.Config).Params()
	for i, t := range m.Params() {
		if len(t) != len(want[i]) {
			return nil, fmt.Errorf("checkpoint %s: tensor %d has %d values, its config needs %d", path, i, len(t), len(want[i]))
		}
	}
	return m, nil
}
