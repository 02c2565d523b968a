# A post-checkout hook runs on the rollback's and the next round's checkout.
hooks=$(git rev-parse --path-format=absolute --git-common-dir)/hooks
mkdir -p "$hooks"
printf '#!/bin/sh\ntouch "%s"\n' "$MARKER" > "$hooks/post-checkout"
chmod +x "$hooks/post-checkout"
