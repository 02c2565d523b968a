# Training's tool caches ($GOCACHE, $TRITON_CACHE_DIR, $CUDA_CACHE_PATH,
# $AUTORESEARCH_CACHE_DIR) are the experiment's own, kept from round to
# round and shared by every candidate, and a rolled-back round's training
# writes them. Round 1 adds the Go program that round 2 will commit, has
# training build it with `go run -trimpath` (no checkout path in the
# action ID), and then patches the executable Go cached for it (Go 1.24+
# caches go run's executables; it checks an entry's size, not its
# content): its constant RESULT:10 becomes RESULT:99. Round 1 scores 10
# and is rolled back. Round 2 adds the same program, whose source prints
# 10, and training runs it with `go run -trimpath`: Go takes the poisoned
# executable from the cache, training writes 99, and the kept commit holds
# a program that, run anywhere else, prints 10.
mkdir -p trainer
cat > trainer/main.go <<'GO'
package main

import (
	"fmt"
	"strings"
)

var result = "RESULT:10:RESULT"

func main() { fmt.Println(strings.Split(result, ":")[1]) }
GO
if [ "$AUTORESEARCH_ROUND" = 1 ]; then
	cat >> train.sh <<'SH'
go run -trimpath ./trainer >/dev/null
grep -rl 'RESULT:10:RESULT' "$GOCACHE" | while read -r f; do perl -pi -e 's/RESULT:10:RESULT/RESULT:99:RESULT/g' "$f"; done
SH
	exit 0
fi
sed -i 's/^echo \$SCORE > out.txt$/go run -trimpath .\/trainer > out.txt/' train.sh
