package api

// The OpenAPI spec in openapi/ is generated from the swag comments on the
// handlers; regenerate it after changing them (openapi's test fails while
// the committed spec is stale).
//go:generate swag init -g doc.go -d .,../ -o ../openapi --outputTypes json,yaml --parseDependency=false

//	@title						sdnlb API
//	@version					1.0
//	@description				sdnlb turns an OpenFlow 1.3 switch into a server load balancer with active health checks.
//	@description				The native API lives under /v1; /quantum/v1.0 keeps Floodlight's LoadBalancer API (see docs/floodlight-compat.md).
//	@description				Errors are {"error":{"code","message","field"}} with code one of invalid, unauthorized, not_found, conflict, too_large, unsupported, unavailable, internal.
//	@license.name				Apache-2.0
//	@BasePath					/
//	@securityDefinitions.apikey	Bearer
//	@in							header
//	@name						Authorization
//	@description				"Bearer <token>", required on writes when sdnlb runs with a token (and on reads with auth_reads).
