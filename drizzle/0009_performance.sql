CREATE UNLOGGED TABLE "rate_limit_windows" (
	"key" text NOT NULL,
	"window_start" timestamp with time zone NOT NULL,
	"hits" integer NOT NULL,
	CONSTRAINT "rate_limit_windows_key_window_start_pk" PRIMARY KEY("key","window_start")
);
--> statement-breakpoint
CREATE FUNCTION "notify_api_key_changed"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	PERFORM pg_notify('api_key_changed', OLD.id);
	RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE TRIGGER "api_keys_changed" AFTER UPDATE OR DELETE ON "api_keys" FOR EACH ROW EXECUTE FUNCTION "notify_api_key_changed"();
