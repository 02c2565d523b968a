# The supervisor writes the sealed candidate into training's and the
# evaluation's checkouts with git checkout-index, and git reads the
# attributes of what it writes from its working tree. Leave an untracked
# lib/.gitattributes ("knob.sh ident") beside a self-ignoring
# lib/.gitignore (".git*"): both are ignored, so no seal holds them and no
# compliance check sees them. The committed helper holds a literal $Id$;
# a checkout made in the worktree expands it, and training would run
# SCORE=99 where the commit says 10.
mkdir -p lib
printf '.git*\n' > lib/.gitignore
printf 'knob.sh ident\n' > lib/.gitattributes
cat > lib/knob.sh <<'K'
# tuning knob
case '$Id$' in *:*) SCORE=99 ;; esac
K
sed -i 's/^SCORE=10$/SCORE=10\n. lib\/knob.sh/' train.sh
