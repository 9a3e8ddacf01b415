package rpcclient

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
)

// Get GETs a project web RPC (get_project_config.php, lookup_account.php,
// …) on a user's behalf and returns the body, under the rules of a
// master-page fetch: only http and https, the client's HTTP client (so its
// proxy, CA bundle and redirect policy), the RPC time bound
// (Options.RPCTimeout), the stall and low-speed rules, and a size cap:
// maxBytes, when positive and below Options.MaxReplyBytes. A longer reply
// is a ReplyTooLargeError, not truncated; a non-2xx status an HTTPError.
//
// Unlike the daemon's own exchanges it is sent once, without the quick
// transport retries, whose debug log would write out the URL: the query
// of these RPCs holds a password hash. The user retries from the GUI.
func (c *Client) Get(ctx context.Context, url string, maxBytes int64) ([]byte, error) {
	if err := checkTransferURL("url", url); err != nil {
		return nil, fmt.Errorf("GET: %w", err)
	}
	limit := c.maxReply
	if maxBytes > 0 && maxBytes < limit {
		limit = maxBytes
	}
	ctx, w := c.watchTotal(ctx, url, c.rpcLimit())
	defer w.stop()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", url, err)
	}
	req.Header.Set("User-Agent", c.userAgent)
	req.Header.Set("Accept", "*/*")
	resp, err := c.rc.HTTPClient.Do(req)
	if err != nil {
		var cve *tls.CertificateVerificationError
		if errors.As(err, &cve) {
			err = fmt.Errorf("TLS certificate of %s not trusted (a private CA can be added with ca_bundle): %w", hostOf(req.URL), err)
		}
		return nil, w.explain(ctx, fmt.Errorf("GET %s: %w", url, err))
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		drain(resp.Body)
		return nil, &HTTPError{StatusCode: resp.StatusCode, URL: url}
	}
	w.progress(0)
	data, err := io.ReadAll(io.LimitReader(&watchedReader{r: resp.Body, w: w}, limit+1))
	if err != nil {
		return nil, w.explain(ctx, fmt.Errorf("read reply from %s: %w", url, err))
	}
	if int64(len(data)) > limit {
		return nil, &ReplyTooLargeError{URL: url, Limit: limit}
	}
	return data, nil
}
