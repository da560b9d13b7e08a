import express, { type Router } from 'express';
// The folder alone: the package's main module loads (and runs) its 4 MB browser bundles into this process.
import getAbsoluteFSPath from 'swagger-ui-dist/absolute-path.js';

/** `/docs`: Swagger UI served from node_modules (no CDN), reading `/openapi.json`. */
export function docsRouter(openApiDocument: object): Router {
  const router = express.Router();
  router.get('/openapi.json', (_req, res) => {
    res.json(openApiDocument);
  });
  router.use('/docs/assets', express.static(getAbsoluteFSPath(), { index: false, maxAge: '1h' }));
  router.get('/docs', (_req, res) => {
    res.type('html').send(DOCS_PAGE);
  });
  return router;
}

const DOCS_PAGE = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>Synthetic Healthcare Sandbox API</title>
  <link rel="stylesheet" href="/docs/assets/swagger-ui.css">
</head>
<body>
  <div id="docs"></div>
  <script src="/docs/assets/swagger-ui-bundle.js"></script>
  <script>
    window.ui = SwaggerUIBundle({ url: '/openapi.json', dom_id: '#docs', deepLinking: true, persistAuthorization: true });
  </script>
</body>
</html>`;
