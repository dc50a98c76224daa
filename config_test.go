package cdb

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type fakeCredential struct{}

func (fakeCredential) GetToken(context.Context, policy.TokenRequestOptions) (azcore.AccessToken, error) {
	return azcore.AccessToken{Token: "t", ExpiresOn: time.Now().Add(time.Hour)}, nil
}

// TestConfigDefaults checks the documented defaults of a minimal Config.
func TestConfigDefaults(t *testing.T) {
	c, err := Config{Endpoint: "https://acct.documents.azure.com:443/", Key: "a2V5"}.withDefaults()
	require.NoError(t, err)
	assert.Equal(t, DefaultDatabase, c.Database)
	assert.Equal(t, DefaultContainer, c.Container)
	assert.Equal(t, 1, c.OrchestrationLanes)
	assert.Equal(t, 1, c.WorkerLanes)
	assert.Equal(t, 2*time.Second, c.ReconcilerInterval)
	assert.Equal(t, 2*time.Second, c.ReconcilerAgeThreshold)
	assert.Equal(t, DefaultLongPollInterval, c.LongPollInterval)
	require.NotNil(t, c.Logger)
	require.NotNil(t, c.Now)
	c.Logger.Info("the default logger discards this")

	c, err = Config{Endpoint: "https://acct.documents.azure.com/", Credential: fakeCredential{}}.withDefaults()
	require.NoError(t, err, "a token credential replaces the key")
	assert.Equal(t, DefaultContainer, c.Container)
}

// TestConfigInvalid checks that each invalid field is reported by name.
func TestConfigInvalid(t *testing.T) {
	cases := []struct {
		cfg  Config
		want string
	}{
		{Config{}, "Endpoint is required"},
		{Config{Endpoint: "https://a/"}, "a Key or a Credential is required"},
		{Config{Endpoint: "not a url", Key: "a2V5"}, "is not an http(s) URL"},
		{Config{Endpoint: "ftp://a/", Key: "a2V5"}, "is not an http(s) URL"},
		{Config{Endpoint: "https://a/", Key: "a2V5", Credential: fakeCredential{}}, "not both"},
		{Config{Endpoint: "https://a/", Key: "a2V5", Database: "a/b"}, "Database"},
		{Config{Endpoint: "https://a/", Key: "a2V5", Container: "x#y"}, "Container"},
		{Config{Endpoint: "https://a/", Key: "a2V5", Container: strings.Repeat("c", 256)}, "Container"},
		{Config{Endpoint: "https://a/", Key: "a2V5", OrchestrationLanes: 300}, "OrchestrationLanes"},
		{Config{Endpoint: "https://a/", Key: "a2V5", WorkerLanes: -1}, "WorkerLanes"},
		{Config{Endpoint: "https://a/", Key: "a2V5", ReconcilerInterval: -time.Second}, "ReconcilerInterval"},
		{Config{Endpoint: "https://a/", Key: "a2V5", ReconcilerAgeThreshold: -time.Second}, "ReconcilerAgeThreshold"},
		{Config{Endpoint: "https://a/", Key: "a2V5", LongPollInterval: -time.Second}, "LongPollInterval"},
		{Config{Endpoint: "https://a/", Key: "a2V5", ChangeFeedWakeups: true, DisableChangeFeedWakeups: true}, "DisableChangeFeedWakeups are both set"},
	}
	for _, c := range cases {
		_, err := c.cfg.withDefaults()
		require.Error(t, err, "config %+v", c.cfg)
		assert.Contains(t, err.Error(), c.want)
		assert.Contains(t, err.Error(), "cdb: invalid config")
	}
}

// TestDeprecatedChangeFeedWakeupsIsAccepted: programs written when the
// wake-ups were off by default still build and get them.
func TestTheOldConcurrencyNamesSetTheLanes(t *testing.T) {
	t.Parallel()
	c, err := Config{Endpoint: "https://a/", Key: "a2V5", OrchestrationConcurrency: 3, WorkerConcurrency: 4}.withDefaults()
	require.NoError(t, err)
	assert.Equal(t, [2]int{3, 4}, [2]int{c.OrchestrationLanes, c.WorkerLanes})
	c, err = Config{Endpoint: "https://a/", Key: "a2V5", OrchestrationLanes: 5, OrchestrationConcurrency: 3}.withDefaults()
	require.NoError(t, err)
	assert.Equal(t, 5, c.OrchestrationLanes, "the new name wins")
	_, err = Config{Endpoint: "https://a/", Key: "a2V5", OrchestrationConcurrency: 300}.withDefaults()
	require.ErrorContains(t, err, "OrchestrationLanes 300")
}

func TestDeprecatedChangeFeedWakeupsIsAccepted(t *testing.T) {
	t.Parallel()
	c, err := Config{Endpoint: "https://a/", Key: "a2V5", ChangeFeedWakeups: true}.withDefaults()
	require.NoError(t, err)
	assert.False(t, c.DisableChangeFeedWakeups)
}

// TestNewRejectsInvalidConfig checks that New reports a bad config without
// contacting anything.
func TestNewRejectsInvalidConfig(t *testing.T) {
	p, err := New(context.Background(), Config{Endpoint: "https://127.0.0.1:1/"})
	require.Error(t, err)
	assert.Nil(t, p)
	assert.Contains(t, err.Error(), "a Key or a Credential is required")
}

// TestConfigFromEnv checks the environment variables ConfigFromEnv reads.
func TestConfigFromEnv(t *testing.T) {
	t.Setenv(EnvEndpoint, "https://env.documents.azure.com/")
	t.Setenv(EnvKey, "a2V5")
	t.Setenv(EnvDatabase, "db1")
	t.Setenv(EnvContainer, "")
	c := ConfigFromEnv()
	assert.Equal(t, "https://env.documents.azure.com/", c.Endpoint)
	assert.Equal(t, "a2V5", c.Key)
	assert.Equal(t, "db1", c.Database)
	c, err := c.withDefaults()
	require.NoError(t, err)
	assert.Equal(t, DefaultContainer, c.Container, "an unset variable leaves the default")
}

// TestConfigFromEnvWithoutAnAccountSaysWhatToSet: New's error for
// ConfigFromEnv with no COSMOS_ENDPOINT names the variables to set and the
// recipe for the embedded emulator; with an endpoint and no key, it names
// COSMOS_KEY.
func TestConfigFromEnvWithoutAnAccountSaysWhatToSet(t *testing.T) {
	t.Setenv(EnvEndpoint, "")
	t.Setenv(EnvKey, "")
	_, err := New(context.Background(), ConfigFromEnv())
	require.Error(t, err)
	for _, want := range []string{"COSMOS_ENDPOINT is not set", "COSMOS_KEY", ".env.example", "emulator.Start", "cfg.HTTPClient", "Run your service locally"} {
		assert.Contains(t, err.Error(), want)
	}
	assert.NotContains(t, err.Error(), "a Key or a Credential is required", "the missing endpoint says it all")

	t.Setenv(EnvEndpoint, "https://127.0.0.1:1/")
	_, err = New(context.Background(), ConfigFromEnv())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "COSMOS_ENDPOINT is set but COSMOS_KEY is not")

	_, err = New(context.Background(), Config{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "an Endpoint is required")
	assert.Contains(t, err.Error(), "emulator.Start", "a Config built by hand gets the recipe too")
	assert.NotContains(t, err.Error(), "COSMOS_ENDPOINT", "a Config built by hand does not come from the environment")
}

// TestConfigHTTPClientAndTransportAreExclusive: HTTPClient is azcore's
// Transport by another name; setting both is refused.
func TestConfigHTTPClientAndTransportAreExclusive(t *testing.T) {
	t.Parallel()
	both := Config{Endpoint: "https://a/", Key: "a2V5", HTTPClient: http.DefaultClient,
		ClientOptions: &azcosmos.ClientOptions{ClientOptions: azcore.ClientOptions{Transport: http.DefaultClient}}}
	_, err := both.withDefaults()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "set HTTPClient or ClientOptions.Transport, not both")
	_, err = Config{Endpoint: "https://a/", Key: "a2V5", HTTPClient: http.DefaultClient}.withDefaults()
	assert.NoError(t, err)
}
