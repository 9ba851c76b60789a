package connector

import "context"

// positionKey is the context key of WithRoutePosition.
type positionKey struct{}

// WithRoutePosition returns ctx telling the provider it is called with
// whether this charge is its payment's first attempt with another provider
// of the route behind it (headWithNext), as the router hands the route out
// (success_rate routes reorder it per payment). The sandboxes read it for
// card 4000000000000259 (decisions §12: the first provider of the route is
// unavailable, the next captures).
func WithRoutePosition(ctx context.Context, headWithNext bool) context.Context {
	return context.WithValue(ctx, positionKey{}, headWithNext)
}

// RoutePosition returns what WithRoutePosition put in ctx; known is false
// when the charge did not come through a router.
func RoutePosition(ctx context.Context) (headWithNext, known bool) {
	v, known := ctx.Value(positionKey{}).(bool)
	return v, known
}
