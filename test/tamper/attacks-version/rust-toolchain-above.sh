# As rust-toolchain, but the toolchain file goes above the worktree too:
# the candidate holds nothing but a comment.
echo '# tuned' >> train.sh
tc=$(cd .. && pwd)/toolchain
mkdir -p "$tc/bin"
printf '#!/bin/sh\ntouch "%s"\necho "score: 99"\n' "$MARKER" > "$tc/bin/cargo"
cp "$tc/bin/cargo" "$tc/bin/rustc"
chmod -R a+rx "$tc"
printf '[toolchain]\npath = "%s"\n' "$tc" > ../rust-toolchain.toml
