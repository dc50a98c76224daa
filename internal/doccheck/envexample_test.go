package doccheck

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEnvExampleKeyIsRequiredWithEndpoint checks what .env.example says
// about an empty COSMOS_KEY: cdb.Config refuses an endpoint without a key
// or credential, and the test kit refuses COSMOS_ENDPOINT without
// COSMOS_KEY, so the file must say the key is required with an endpoint and
// must not promise a default key.
func TestEnvExampleKeyIsRequiredWithEndpoint(t *testing.T) {
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, ".env.example"))
	if err != nil {
		t.Fatal(err)
	}
	var comment []string
	for _, line := range strings.Split(string(data), "\n") {
		switch {
		case strings.HasPrefix(line, "#"):
			comment = append(comment, strings.TrimSpace(strings.TrimPrefix(line, "#")))
		case strings.HasPrefix(line, "COSMOS_KEY="):
			text := strings.Join(comment, " ")
			if !strings.Contains(text, "Required whenever COSMOS_ENDPOINT is set") {
				t.Errorf("the COSMOS_KEY comment must say it is required whenever COSMOS_ENDPOINT is set: %q", text)
			}
			if strings.Contains(strings.ToLower(text), "empty (default)") {
				t.Errorf("the COSMOS_KEY comment promises a default for an empty key: %q", text)
			}
			return
		default:
			comment = nil
		}
	}
	t.Fatal(".env.example has no COSMOS_KEY line")
}
