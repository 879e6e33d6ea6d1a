package pathutil

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestRel(t *testing.T) {
	tests := []struct {
		path, root, want string
		ok               bool
	}{
		{"/a/b", "/a/b", ".", true},
		{"/a/b/c/d", "/a/b", "c/d", true},
		{"/a/bc", "/a/b", "", false},
		{"/a", "/a/b", "", false},
		{"/x/y", "/", "x/y", true},
		{"/a/..b", "/a", "..b", true},
	}
	for _, tt := range tests {
		rel, ok := Rel(filepath.FromSlash(tt.path), filepath.FromSlash(tt.root))
		if want := filepath.FromSlash(tt.want); rel != want || ok != tt.ok {
			t.Errorf("Rel(%q, %q) (-want +got):\n-%q, %v\n+%q, %v", tt.path, tt.root, want, tt.ok, rel, ok)
		}
	}
}

// FuzzRel: a path accepted as within a root joins back to itself and
// names nothing above the root; one refused is not the root or below it.
func FuzzRel(f *testing.F) {
	f.Add("/a/b/c", "/a/b")
	f.Add("/a/bc", "/a/b")
	f.Add("/a/../..", "/")
	f.Fuzz(func(t *testing.T, path, root string) {
		if !filepath.IsAbs(path) || !filepath.IsAbs(root) {
			return
		}
		path, root = filepath.Clean(path), filepath.Clean(root)
		rel, ok := Rel(path, root)
		below := path == root || strings.HasPrefix(path, strings.TrimSuffix(root, string(filepath.Separator))+string(filepath.Separator))
		if ok != below {
			t.Fatalf("Rel(%q, %q) = %v, want %v", path, root, ok, below)
		}
		if ok && (filepath.Join(root, rel) != path || !filepath.IsLocal(rel)) {
			t.Fatalf("Rel(%q, %q) = %q", path, root, rel)
		}
	})
}
