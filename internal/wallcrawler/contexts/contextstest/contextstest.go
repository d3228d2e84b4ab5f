// Package contextstest builds hostile context archives (tar.gz) for tests
// of the unpack caps: gzip bombs, archives of very many entries, and
// entries whose header lies about their size. Every builder streams its
// output and keeps little in memory, whatever the size it describes.
package contextstest

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"time"
)

// chunk is the size of the repeated gzip member of Bomb.
const chunk = 1 << 20

// Bomb describes a gzip bomb: one tar entry of Size zero bytes.
type Bomb struct {
	// Name of the entry.
	Name string
	// Size is the number of zero bytes of data, a multiple of 1 MiB.
	Size int64
	// Type is the entry's type flag; default tar.TypeReg. A type the
	// unpacker does not know (e.g. 'Z') has its data skipped by the tar
	// reader instead of written.
	Type byte
	// Announce, when positive, is the size the header claims instead of
	// Size: the tar reader then takes the zeros after the first Announce
	// bytes for the end of the archive.
	Announce int64
}

// Write writes the bomb as a tar.gz to w. The gzip stream is a header
// member, the same compressed 1 MiB of zeros repeated, and a trailer
// member, so that 2 GiB cost about 2 MiB of output and no compression
// work.
func (b Bomb) Write(w io.Writer) error {
	if b.Size%chunk != 0 {
		return fmt.Errorf("contextstest: bomb size %d is not a multiple of %d", b.Size, chunk)
	}
	announced := b.Size
	if b.Announce > 0 {
		announced = b.Announce
	}
	typ := b.Type
	if typ == 0 {
		typ = tar.TypeReg
	}
	hdr, err := headerBlock(&tar.Header{Typeflag: typ, Name: b.Name, Mode: 0o600, Size: announced, ModTime: time.Unix(1e9, 0)})
	if err != nil {
		return err
	}
	if err := member(w, hdr); err != nil {
		return err
	}
	var zeros bytes.Buffer
	if err := member(&zeros, make([]byte, chunk)); err != nil {
		return err
	}
	for range b.Size / chunk {
		if _, err := w.Write(zeros.Bytes()); err != nil {
			return err
		}
	}
	pad := (512 - announced%512) % 512
	if b.Announce > 0 {
		pad = 0 // the zeros already written end the archive
	}
	return member(w, make([]byte, pad+1024))
}

// Entries writes a tar.gz of n entries: the directory "d/" repeated when
// dirs is true (nothing new on disk past the first; the gzip stream
// repeats one compressed member of 2048 headers, so that it costs little
// to build), else n empty regular files f0, f1, ...
func Entries(w io.Writer, n int, dirs bool) error {
	if dirs {
		hdr, err := headerBlock(&tar.Header{Typeflag: tar.TypeDir, Name: "d/", Mode: 0o700, ModTime: time.Unix(1e9, 0)})
		if err != nil {
			return err
		}
		const per = 2048
		var full bytes.Buffer
		if err := member(&full, bytes.Repeat(hdr, per)); err != nil {
			return err
		}
		for range n / per {
			if _, err := w.Write(full.Bytes()); err != nil {
				return err
			}
		}
		return member(w, append(bytes.Repeat(hdr, n%per), make([]byte, 1024)...))
	}
	gz := gzip.NewWriter(w)
	tw := tar.NewWriter(gz)
	for i := range n {
		h := &tar.Header{Typeflag: tar.TypeReg, Name: fmt.Sprintf("f%d", i), Mode: 0o600, ModTime: time.Unix(1e9, 0)}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return gz.Close()
}

// ShortHeader writes a tar.gz whose only entry, name, announces claimed
// bytes but is followed by actual bytes of 'A' (actual > claimed): a tar
// reader takes the excess for the next header, which is garbage.
func ShortHeader(w io.Writer, name string, claimed, actual int64) error {
	hdr, err := headerBlock(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o600, Size: claimed, ModTime: time.Unix(1e9, 0)})
	if err != nil {
		return err
	}
	gz := gzip.NewWriter(w)
	if _, err := gz.Write(hdr); err != nil {
		return err
	}
	a := bytes.Repeat([]byte{'A'}, 64<<10)
	for left := actual; left > 0; left -= int64(len(a)) {
		if _, err := gz.Write(a[:min(left, int64(len(a)))]); err != nil {
			return err
		}
	}
	if _, err := gz.Write(make([]byte, 1024)); err != nil {
		return err
	}
	return gz.Close()
}

// headerBlock returns the tar header blocks of h.
func headerBlock(h *tar.Header) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(h); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil // no Close: the data is not written through tw
}

// member writes data as one complete gzip member.
func member(w io.Writer, data []byte) error {
	gz, err := gzip.NewWriterLevel(w, gzip.BestCompression)
	if err != nil {
		return err
	}
	if _, err := gz.Write(data); err != nil {
		return err
	}
	return gz.Close()
}
