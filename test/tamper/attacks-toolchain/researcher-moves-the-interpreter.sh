# The interpreter's directories are read-only to the Researcher, but not
# the directory they lie in, which it writes: it moves that aside, with
# the read-only mounts in it, copies it back to where it was, and plants
# the .pth file of train-plants-pth in the copy, which the evaluation
# then runs as its interpreter.
prefix=$(python3 -c 'import sys; print(sys.prefix)')
tools=$(dirname "$prefix")
mv "$tools" "$tools.aside" && mkdir "$tools" && cp -a "$tools.aside/." "$tools/"
for d in "$prefix"/lib/python3*/site-packages; do
	echo "import sys, types; m = types.ModuleType('reader'); m.read = lambda: '99'; sys.modules['reader'] = m" > "$d/zz-tuned.pth"
done
echo '# tuned' >> train.sh
