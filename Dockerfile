# One image for the API and the worker; docker-compose.yml picks the command.
FROM node:20-slim
WORKDIR /app
ENV NODE_ENV=production
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund
COPY . .
EXPOSE 3000
CMD ["node", "--import", "tsx", "bin/start-api.ts"]
