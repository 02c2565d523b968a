"""Fixed data preparation for the nanogpt-torch example.

Writes data/train.bin and data/val.bin: English-like text made by seeded
recombination (a word-level Markov chain) of the small corpus below, so that
no download is needed and every run produces the same bytes. Tokens are raw
bytes (vocabulary 256), which makes the eval's bits-per-byte exact.

Also holds the constants that train.py and eval.py share. This file is fixed:
the researcher may read it but not change it.
"""
import hashlib
import os
import random
import sys

DATA_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
TRAIN_PATH = os.path.join(DATA_DIR, "train.bin")
VAL_PATH = os.path.join(DATA_DIR, "val.bin")

VOCAB_SIZE = 256  # byte-level tokens
CONTEXT_LEN = 64  # the context length the eval scores the model at
EVAL_BATCH = 16  # the batch shape the eval feeds the model: (EVAL_BATCH, CONTEXT_LEN)

TRAIN_BYTES = 300_000
VAL_BYTES = 40_000
TRAIN_SEED = 1
VAL_SEED = 2
ORDER = 2  # words of history in the Markov chain

CORPUS = """\
The river leaves the hills in early spring and carries the melted snow down to the valley.
In the valley the farmers open the gates and let the water into the fields.
The water moves slowly across the fields and settles in the low corners near the road.
By the end of the month the fields are green and the river is quiet again.
The old mill stands where the river bends, and its wheel still turns when the water is high.
Children walk along the bank after school and count the boats that pass under the bridge.
The bridge was built of grey stone more than two hundred years ago.
Every winter the town repairs a few stones, and every spring the river tests the work.
A small train runs from the town to the coast twice a day.
The morning train is full of workers, and the evening train is full of tired people going home.
The station master knows most of the passengers by name and greets them at the door.
When the train is late he writes the reason on a board beside the ticket window.
Most of the time the reason is the weather, and sometimes it is a cow on the line.
On the coast the wind is strong and the air smells of salt and wet wood.
Fishermen leave the harbour before dawn and come back when the sun is high.
They sell their fish on the market square, where the women from the hills sell bread and cheese.
The market opens at seven and closes when the last basket is empty.
A good cook buys what is fresh and decides the menu only after she has seen the market.
In the kitchen she cuts the onions first, because the smell tells everyone that dinner has begun.
She keeps the bread warm in a cloth and the soup warm on the back of the stove.
The recipe was written by her grandmother in a small book with a blue cover.
The book is full of notes in the margins, and some of the notes disagree with the recipe.
Her brother prefers the notes, and her mother prefers the recipe, and the soup is good either way.
In the evening the family sits at the long table and talks about the day.
The youngest child tells a story about a fox that lives behind the school.
Nobody has seen the fox, but everyone has heard it at night.
The teacher says that foxes are shy and clever and that they avoid people when they can.
At school the children learn to read, to count, and to draw maps of the valley.
Their maps show the river, the bridge, the mill, the station, and the road to the coast.
One map shows a castle on the hill, although there is no castle on the hill.
The teacher keeps that map on the wall because she likes the castle.
In the library there are books about ships, stars, plants, and the history of the town.
The librarian is a patient man who repairs old books with thread and glue.
He says that a book is a machine for carrying thoughts across time.
On clear nights the sky above the valley is full of stars.
The astronomer from the coast comes twice a year with a large telescope on a cart.
She sets it up in the field behind the mill and invites anyone who wants to look.
Through the telescope the moon looks close enough to touch, and the planets look like small coins.
She explains that light from the stars is old and that some of those stars may no longer exist.
The children find this idea strange and repeat it to each other for weeks.
In summer the days are long and the work in the fields begins before the heat.
The farmers cut the hay, turn it in the sun, and carry it to the barns on wooden carts.
A storm in the afternoon can ruin a week of work, so they watch the clouds all day.
When the first drops fall everyone runs, and the dogs run with them, barking at the thunder.
After the storm the air is cool and the road is covered with small branches and leaves.
In autumn the apples are ready and the whole town helps with the harvest.
The best apples are stored in the cellar, and the rest are pressed into juice and cider.
The cider is sweet in the first week and sharp by the end of the winter.
Winter brings snow to the hills and ice to the edges of the river.
The train runs more slowly in the snow, and the station master lights a fire in the waiting room.
People wait by the fire, drink tea, and read the newspaper from the day before.
The newspaper reports the price of wheat, the height of the river, and the results of the games.
Once a year the town holds a fair with music, games, and a long table of cakes.
A band from the coast plays in the square until late at night.
The old people dance first, and the young people laugh at them, and then everyone dances.
When the fair is over the square is quiet again, and the river keeps moving toward the sea.
"""


def markov_text(seed, size):
    """Returns at least size bytes of text from an order-ORDER word chain."""
    sentences = [line.split() for line in CORPUS.splitlines() if line.strip()]
    chain = {}
    for words in sentences:
        padded = [None] * ORDER + words + [None]
        for i in range(len(words) + 1):
            chain.setdefault(tuple(padded[i:i + ORDER]), []).append(padded[i + ORDER])
    rng = random.Random(seed)
    paragraphs, length = [], 0
    while length < size:
        paragraph = []
        for _ in range(rng.randint(3, 7)):
            state, words = (None,) * ORDER, []
            while True:
                word = rng.choice(chain[state])
                if word is None:
                    break
                words.append(word)
                state = state[1:] + (word,)
            paragraph.append(" ".join(words))
        text = " ".join(paragraph) + "\n\n"
        paragraphs.append(text)
        length += len(text)
    return "".join(paragraphs).encode("ascii")[:size]


def write_if_changed(path, data):
    if os.path.exists(path):
        with open(path, "rb") as f:
            if f.read() == data:
                return False
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)
    return True


def load_split(path):
    """Returns the bytes of a split, failing clearly when prepare.py has not run."""
    if not os.path.exists(path):
        sys.exit(f"error: {path} is missing; run `python3 prepare.py` first")
    with open(path, "rb") as f:
        return f.read()


def main():
    os.makedirs(DATA_DIR, exist_ok=True)
    for path, seed, size in ((TRAIN_PATH, TRAIN_SEED, TRAIN_BYTES), (VAL_PATH, VAL_SEED, VAL_BYTES)):
        data = markov_text(seed, size)
        state = "wrote" if write_if_changed(path, data) else "kept"
        print(f"{state} {os.path.relpath(path)}: {len(data)} bytes sha256={hashlib.sha256(data).hexdigest()[:16]}")


if __name__ == "__main__":
    main()
