// Package docs holds the one document of the repository that the gateway
// serves itself: openapi.json, the OpenAPI 3.1 description of the API,
// written by hand. It lives only here, at docs/openapi.json, and the binary
// embeds this very file, so the document served at /v1/openapi.json and the
// committed one are the same bytes by construction. What keeps it true to
// the gateway is the end-to-end suite, which checks every exchange it makes
// against it (internal/apidoc/apidoctest).
package docs

import _ "embed"

// OpenAPI is the API's OpenAPI 3.1 document, as committed.
//
//go:embed openapi.json
var OpenAPI string
