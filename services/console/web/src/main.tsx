// The console's entry: reads the session, shows sign-in without one, and the pages with one. Routes live in the URL's
// fragment (#/workflows/x), so the backend serves one index.html and needs no fallback for page paths.
import './styles.css';
import { Component, type ErrorInfo, lazy, StrictMode, Suspense, type ReactNode, useCallback, useEffect, useMemo, useState } from 'react';
import { createRoot } from 'react-dom/client';
import { HashRouter, Navigate, Route, Routes } from 'react-router';
import { currentSession, type Session, whenSignedOut } from './api.js';
import { Layout } from './components/layout.js';
import { ErrorNote } from './components/status.js';
import { AuditPage } from './pages/audit.js';
import { FailuresPage } from './pages/failures.js';
import { SchedulesPage } from './pages/schedules.js';
import { SignIn } from './pages/sign-in.js';
import { SkillsPage } from './pages/skills.js';
import { WorkflowsPage } from './pages/workflows.js';
import { SessionContext } from './session.js';

// the workflow page's picture (React Flow, dagre) is loaded when a workflow is opened, not with the first page; an
// address that opens one starts loading it at once, beside the session's request
const workflowModule = (): Promise<{ WorkflowPage: () => ReactNode }> => import('./pages/workflow.js');
if (window.location.hash.startsWith('#/workflows/')) void workflowModule();
const WorkflowPage = lazy(() => workflowModule().then((module) => ({ default: module.WorkflowPage })));

type Phase =
  { readonly kind: 'reading' } | { readonly kind: 'signed-out'; readonly notice?: string } | { readonly kind: 'signed-in'; readonly session: Session };

function App(): ReactNode {
  const [phase, setPhase] = useState<Phase>({ kind: 'reading' });
  const [error, setError] = useState<unknown>();
  const read = useCallback(() => {
    currentSession()
      .then((session) => setPhase(session === undefined ? { kind: 'signed-out' } : { kind: 'signed-in', session }))
      .catch((failure: unknown) => {
        setError(failure);
        setPhase({ kind: 'signed-out' });
      });
  }, []);
  useEffect(() => {
    whenSignedOut(() => setPhase({ kind: 'signed-out', notice: 'Your session has ended. Sign in again.' }));
    read();
  }, [read]);
  const signedOut = useCallback(() => setPhase({ kind: 'signed-out' }), []);
  const state = useMemo(() => (phase.kind === 'signed-in' ? { session: phase.session, signedOut } : undefined), [phase, signedOut]);
  if (phase.kind === 'reading') {
    return (
      <p className="muted" role="status">
        Loading…
      </p>
    );
  }
  if (state === undefined) {
    return (
      <>
        <ErrorNote error={error} />
        <SignIn notice={phase.kind === 'signed-out' ? phase.notice : undefined} onSignedIn={(session) => setPhase({ kind: 'signed-in', session })} />
      </>
    );
  }
  return (
    <SessionContext.Provider value={state}>
      <HashRouter>
        <Routes>
          <Route element={<Layout />}>
            <Route index element={<Navigate to="/workflows" replace />} />
            <Route path="workflows" element={<WorkflowsPage />} />
            <Route
              path="workflows/:name"
              element={
                <Suspense
                  fallback={
                    <p className="muted" role="status">
                      Loading the workflow page…
                    </p>
                  }
                >
                  <WorkflowPage />
                </Suspense>
              }
            />
            <Route path="failures" element={<FailuresPage />} />
            <Route path="audit" element={<AuditPage />} />
            <Route path="skills" element={<SkillsPage />} />
            <Route path="schedules" element={<SchedulesPage />} />
            <Route path="*" element={<NotFound />} />
          </Route>
        </Routes>
      </HashRouter>
    </SessionContext.Provider>
  );
}

/** A page that throws while it renders shows what went wrong in place of a blank page. */
class PageErrorBoundary extends Component<{ children: ReactNode }, { error: unknown }> {
  override state: { error: unknown } = { error: undefined };

  static getDerivedStateFromError(error: unknown): { error: unknown } {
    return { error };
  }

  override componentDidCatch(error: unknown, info: ErrorInfo): void {
    console.error('the console page failed', error, info.componentStack);
  }

  override render(): ReactNode {
    if (this.state.error === undefined) return this.props.children;
    return (
      <main id="main">
        <h1>This page failed</h1>
        <ErrorNote error={this.state.error} />
        <p>
          <a href="/">Back to the workflows</a>
        </p>
      </main>
    );
  }
}

function NotFound(): ReactNode {
  return (
    <>
      <h1>No such page</h1>
      <p role="alert">This console has no page at this address.</p>
    </>
  );
}

const root = document.getElementById('root');
if (root === null) throw new TypeError('index.html has no #root');
createRoot(root).render(
  <StrictMode>
    <PageErrorBoundary>
      <App />
    </PageErrorBoundary>
  </StrictMode>,
);
