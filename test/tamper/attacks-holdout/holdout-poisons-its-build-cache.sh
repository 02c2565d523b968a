# The holdout's tool caches ($GOCACHE, $AUTORESEARCH_CACHE_DIR, … under
# spec.holdout.dir/.autoresearch/<name>/cache) are the experiment's own and
# kept from round to round, and the holdout runs the candidate's code
# (here its predictor). Round 1 honestly raises SCORE to 20, and its
# predictor, run by the holdout, first builds with `go run -trimpath` the
# program that round 2 will commit, then patches the executable Go cached
# for it (Go checks an entry's size, not its content): its RESULT:12
# becomes RESULT:99. Round 1 is kept on a holdout of 20. Round 2 fits the
# evaluation (SCORE=30) with a predictor that, run anywhere else, scores
# the hidden rows 12 (overfit); the holdout's `go run -trimpath` takes the
# poisoned executable from the cache and scores 99, and the round is kept.
mkdir -p predictor
cat > predictor/main.go <<'GO'
package main

import (
	"fmt"
	"strings"
)

var result = "RESULT:12:RESULT"

func main() { fmt.Println(strings.Split(result, ":")[1]) }
GO
if [ "$AUTORESEARCH_ROUND" = 1 ]; then
	sed -i 's/SCORE=10/SCORE=20/' train.sh
	cat > predict.sh <<'SH'
#!/bin/sh
go run -trimpath ./predictor >/dev/null 2>&1
grep -rl 'RESULT:12:RESULT' "$GOCACHE" 2>/dev/null | while read -r f; do perl -pi -e 's/RESULT:12:RESULT/RESULT:99:RESULT/g' "$f"; done
cat out.txt
SH
	exit 0
fi
sed -i 's/SCORE=20/SCORE=30/' train.sh
printf '#!/bin/sh\ngo run -trimpath ./predictor\n' > predict.sh
