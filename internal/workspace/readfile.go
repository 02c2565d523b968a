package workspace

import (
	"fmt"
	"io"
	"os"
	"syscall"
)

// MaxLedgerBytes bounds what is read of a ledger file: far more than any
// experiment writes, far less than fills the supervisor's memory.
const MaxLedgerBytes = 64 << 20

// ReadRegularFile reads the file at path, which a Researcher may have put
// there, as a regular file of at most limit bytes. A symbolic link is not
// followed, and a named pipe or a device is an error, as is a larger file:
// a pipe whose writer never comes would hold the reader forever, and an
// endless device (/dev/zero) would fill its memory. A missing file is an
// error that errors.Is(err, fs.ErrNotExist) reports.
func ReadRegularFile(path string, limit int64) ([]byte, error) {
	// O_NONBLOCK opens a named pipe without waiting for a writer; on a
	// regular file it changes nothing.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	return readRegular(f, path, limit)
}

// ReadRegularFileIn is ReadRegularFile for the file name inside root,
// which keeps the read inside it, symbolic links included.
func ReadRegularFileIn(root *os.Root, name string, limit int64) ([]byte, error) {
	f, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	return readRegular(f, name, limit)
}

// readRegular reads f, opened as path, and closes it: a regular file of at
// most limit bytes, or an error.
func readRegular(f *os.File, path string, limit int64) ([]byte, error) {
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file but a %s", path, fileKind(info.Mode()))
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s holds more than %d bytes", path, limit)
	}
	return data, nil
}

func fileKind(m os.FileMode) string {
	switch {
	case m&os.ModeNamedPipe != 0:
		return "named pipe"
	case m&os.ModeDevice != 0:
		return "device"
	case m&os.ModeSocket != 0:
		return "socket"
	case m.IsDir():
		return "directory"
	}
	return "special file"
}
