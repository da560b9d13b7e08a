export { freePort } from '../../platform/free-port';
