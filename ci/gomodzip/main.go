// Command gomodzip lays out one version of the repository's Go module as a
// module proxy serves it (GOPROXY=file://DIR), so CI can `go get` the module
// the way a user does, without publishing it.
//
//	go run ./ci/gomodzip -repo . -version v0.1.0 -out DIR
//
// The zip holds the files git tracks (with their working-tree contents, so
// an uncommitted edit is tested, and an untracked file the build needs shows
// up as a failure). It is made by golang.org/x/mod/zip, the code the go
// command and the proxies use, which leaves out what a module zip never holds
// (nested modules such as this tool's, vendor directories, symbolic links)
// and refuses what it may not (paths, case collisions, the size limits).
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	modzip "golang.org/x/mod/zip"
)

// repoFile is one tracked file, read from the working tree.
type repoFile struct{ root, rel string }

func (f repoFile) Path() string                 { return f.rel }
func (f repoFile) Lstat() (fs.FileInfo, error)  { return os.Lstat(filepath.Join(f.root, f.rel)) }
func (f repoFile) Open() (io.ReadCloser, error) { return os.Open(filepath.Join(f.root, f.rel)) }

func main() {
	repo := flag.String("repo", ".", "repository root (holds go.mod)")
	version := flag.String("version", "v0.1.0", "module version to write")
	out := flag.String("out", "", "proxy directory to write into")
	flag.Parse()
	if *out == "" {
		log.Fatal("gomodzip: -out is required")
	}
	if err := run(*repo, *version, *out); err != nil {
		log.Fatalf("gomodzip: %v", err)
	}
}

func run(repo, version, out string) error {
	gomod, err := os.ReadFile(filepath.Join(repo, "go.mod"))
	if err != nil {
		return err
	}
	mv := module.Version{Path: modfile.ModulePath(gomod), Version: version}
	if err := module.Check(mv.Path, mv.Version); err != nil {
		return err
	}
	files, err := trackedFiles(repo)
	if err != nil {
		return err
	}
	checked, err := modzip.CheckFiles(files)
	if err != nil {
		return fmt.Errorf("the module zip would be refused: %w", err)
	}

	escaped, err := module.EscapePath(mv.Path)
	if err != nil {
		return err
	}
	dir := filepath.Join(out, escaped, "@v")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var zipped bytes.Buffer
	if err := modzip.Create(&zipped, mv, files); err != nil {
		return err
	}
	info, err := json.Marshal(struct{ Version, Time string }{version, time.Now().UTC().Format(time.RFC3339)})
	if err != nil {
		return err
	}
	for name, data := range map[string][]byte{
		version + ".zip":  zipped.Bytes(),
		version + ".mod":  gomod,
		version + ".info": info,
		"list":            []byte(version + "\n"),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return err
		}
	}
	fmt.Printf("gomodzip: %s@%s: %d files (%d left out: nested modules, vendor, links), zip %d bytes, in %s\n",
		mv.Path, version, len(checked.Valid), len(checked.Omitted), zipped.Len(), dir)
	return nil
}

// trackedFiles lists the files git tracks under repo that exist in the
// working tree (a tracked file deleted but not yet committed is left out).
func trackedFiles(repo string) ([]modzip.File, error) {
	cmd := exec.Command("git", "ls-files", "-z", "--cached")
	cmd.Dir = repo
	cmd.Stderr = os.Stderr
	listing, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git ls-files in %s: %w", repo, err)
	}
	var files []modzip.File
	for _, rel := range strings.Split(string(listing), "\x00") {
		if rel == "" {
			continue
		}
		if _, err := os.Lstat(filepath.Join(repo, rel)); errors.Is(err, fs.ErrNotExist) {
			continue
		}
		files = append(files, repoFile{root: repo, rel: filepath.ToSlash(rel)})
	}
	return files, nil
}
