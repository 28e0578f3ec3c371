package api

import (
	"net/http"

	"github.com/go-chi/chi/v5"
	httpSwagger "github.com/swaggo/http-swagger/v2"

	"github.com/sdnlb/sdnlb/openapi"
)

// swaggerRoutes serves Swagger UI from the assets embedded in the binary
// (no CDN) and the committed spec at /swagger/doc.json.
func swaggerRoutes(r chi.Router) {
	toIndex := func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/swagger/index.html", http.StatusMovedPermanently)
	}
	r.Get("/", toIndex)
	r.Get("/doc.json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		_, _ = w.Write(openapi.JSON)
	})
	r.Get("/*", httpSwagger.Handler(httpSwagger.URL("/swagger/doc.json"), httpSwagger.PersistAuthorization(true)))
}
