CREATE TABLE "bulk_export_files" (
	"export_id" text NOT NULL,
	"name" text NOT NULL,
	"kind" text NOT NULL,
	"resource_type" text NOT NULL,
	"count" integer NOT NULL,
	"content" text NOT NULL,
	CONSTRAINT "bulk_export_files_export_id_name_pk" PRIMARY KEY("export_id","name")
);
--> statement-breakpoint
CREATE TABLE "bulk_exports" (
	"id" text PRIMARY KEY NOT NULL,
	"organization_id" text NOT NULL,
	"status" text NOT NULL,
	"request" jsonb NOT NULL,
	"chaos" jsonb,
	"types_total" integer NOT NULL,
	"types_written" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"error" text,
	"transaction_time" timestamp with time zone NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"completed_at" timestamp with time zone,
	"expires_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
ALTER TABLE "bulk_export_files" ADD CONSTRAINT "bulk_export_files_export_id_bulk_exports_id_fk" FOREIGN KEY ("export_id") REFERENCES "public"."bulk_exports"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "bulk_exports" ADD CONSTRAINT "bulk_exports_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "bulk_exports_organization_idx" ON "bulk_exports" USING btree ("organization_id","status");--> statement-breakpoint
CREATE INDEX "bulk_exports_expires_at_idx" ON "bulk_exports" USING btree ("expires_at");